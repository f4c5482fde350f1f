# Makefile - builds the supervisor, every probe (BPF skeletons included), tests, fuzzers and benchmarks.
# `make` builds everything into build/; `make test` installs what is missing and runs every test;
# `make run` starts the supervisor with config/gala-gopher.conf. V=1 for a loud build.
.DELETE_ON_ERROR:
.SUFFIXES:
.DEFAULT_GOAL := all

BUILD ?= build
V ?= 0
SAN ?= 0

ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-8s %s\n'
endif

CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter -Wstrict-prototypes
CFLAGS ?= -O2 -g
CFLAGS += $(WARN) -std=gnu11 -D_GNU_SOURCE -DGG_VERSION='"$(VERSION)"' -MMD -MP \
	  -Iipc -Ischema -Iprobes/lib -Ibpf -I$(BUILD)/gen
LDFLAGS ?=
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

LIBS_SUP := -luv -lnng -lconfig -lcjson -lmicrohttpd -lgnutls -lrdkafka -lm -lpthread
LIBS_PROBE := -lnng -lcjson -lbpf -lelf -lz -lm -lpthread

# ---- sources ------------------------------------------------------------------------------------
IPC_SRCS := $(filter-out %_test.c,$(wildcard ipc/*.c))
SCHEMA_SRCS := $(filter-out %_test.c schema/meta2h.c,$(wildcard schema/*.c))
PLIB_SRCS := $(filter-out %_test.c,$(wildcard probes/lib/*.c))
SUP_SRCS := $(filter-out %_test.c,$(wildcard supervisor/*.c))
PROBES := $(filter-out lib,$(notdir $(patsubst %/,%,$(wildcard probes/*/))))
META_FILES := $(wildcard schema/*.meta)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIBIPC := $(BUILD)/lib/libggipc.a
LIBSCHEMA := $(BUILD)/lib/libggschema.a
LIBPROBE := $(BUILD)/lib/libggprobe.a
SUPERVISOR := $(BUILD)/gala-gopher
META2H := $(BUILD)/tools/meta2h
PROBE_BINS := $(addprefix $(BUILD)/probes/,$(PROBES))
META_HDRS := $(patsubst schema/%.meta,$(BUILD)/gen/%.meta.h,$(META_FILES))

UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
TEST_HELPERS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(wildcard tests/helpers/*.c))
# cpu_split (flame graph ground truth) keeps every frame: frame pointers, no inlining, no tail calls;
# cpu_split_stripped is the same binary without symbols.
TEST_HELPERS += $(if $(wildcard tests/helpers/cpu_split.c),$(BUILD)/tests/cpu_split_stripped)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

.PHONY: all deps run test test-unit test-integration test-san fuzz bench lint clean
all: $(SUPERVISOR) $(PROBE_BINS) $(UNIT_TESTS) $(TEST_HELPERS) $(BENCH_BINS)

deps:
	$(Q)scripts/install-deps.sh

# ---- objects and libraries ------------------------------------------------------------------------
$(BUILD)/obj/%.o: %.c
	$(say) CC $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIBIPC): $(call obj,$(IPC_SRCS))
$(LIBSCHEMA): $(call obj,$(SCHEMA_SRCS))
$(LIBPROBE): $(call obj,$(PLIB_SRCS))
$(BUILD)/lib/%.a:
	$(say) AR $@
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SUPERVISOR): $(call obj,$(SUP_SRCS)) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)$(CC) $(LDFLAGS) $^ $(LIBS_SUP) -o $@

# meta2h turns a .meta file into the C table descriptors a probe emits records with.
$(META2H): $(call obj,schema/meta2h.c) $(LIBSCHEMA)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lconfig -o $@

$(BUILD)/gen/%.meta.h: schema/%.meta $(META2H)
	$(say) META2H $<
	$(Q)mkdir -p $(@D)
	$(Q)$(META2H) $< > $@

# ---- BPF chain: vmlinux.h -> .bpf.o -> .skel.h ----------------------------------------------------
$(BUILD)/gen/vmlinux.h:
	$(say) BTF $@
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD)/gen -Ibpf \
	      -idirafter /usr/include/$(shell uname -m)-linux-gnu -idirafter /usr/include

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/gen/vmlinux.h
	$(say) BPF $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(say) SKEL $@
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@

# Keep the objects: make would delete them as intermediates, and the next make (their .d files now
# naming them) would rebuild every skeleton and relink every BPF probe.
.SECONDARY: $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(wildcard bpf/*.bpf.c))

# ---- probes: probes/<bin>/*.c (+ bpf/<bin>.bpf.c, + schema/<bin>.meta) -> build/probes/<bin> --------
define PROBE_template
$(1)_SRCS := $$(wildcard probes/$(1)/*.c)
$(1)_GEN := $$(if $$(wildcard bpf/$(1).bpf.c),$(BUILD)/gen/$(1).skel.h) \
	    $$(if $$(wildcard schema/$(1).meta),$(BUILD)/gen/$(1).meta.h)
$$(call obj,$$($(1)_SRCS)): $$($(1)_GEN)
$(BUILD)/probes/$(1): $$(call obj,$$($(1)_SRCS)) $(LIBPROBE) $(LIBSCHEMA) $(LIBIPC)
	$$(say) LINK $$@
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(LDFLAGS) $$^ $$(LIBS_PROBE) -lconfig -o $$@
endef
$(foreach p,$(PROBES),$(eval $(call PROBE_template,$(p))))
$(call obj,$(PLIB_SRCS)): $(META_HDRS)

# ---- tests, helpers, benchmarks -------------------------------------------------------------------
LIBSUP := $(BUILD)/lib/libggsup.a
$(LIBSUP): $(filter-out $(BUILD)/obj/supervisor/main.o,$(call obj,$(SUP_SRCS)))

# test_sup_* exercise supervisor code; the others only the libraries.
$(BUILD)/tests/test_sup_%: $(BUILD)/obj/tests/unit/test_sup_%.o $(LIBSUP) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lcmocka $(LIBS_SUP) -o $@

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(LIBPROBE) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lcmocka $(LIBS_PROBE) -lconfig -o $@
$(call obj,$(wildcard tests/unit/*.c)): $(META_HDRS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/helpers/%.o $(LIBPROBE) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(LIBS_PROBE) -lconfig -lrdkafka -o $@
$(call obj,$(wildcard tests/helpers/*.c)): $(META_HDRS)
$(BUILD)/obj/tests/helpers/cpu_split.o: private CFLAGS += -fno-omit-frame-pointer -fno-shrink-wrap -fno-inline -fno-optimize-sibling-calls \
	-fno-sanitize=all
$(BUILD)/tests/cpu_split_stripped: $(BUILD)/tests/cpu_split
	$(say) STRIP $@
	$(Q)strip -o $@ $<

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIBPROBE) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(LIBS_PROBE) -lconfig -o $@

# Benchmarks of supervisor code (metrics rendering, the Kafka producer) link the supervisor objects.
SUP_BENCHES := $(filter $(BUILD)/bench/metrics_render $(BUILD)/bench/kafka_%,$(BENCH_BINS))
$(SUP_BENCHES): $(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIBSUP) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(LIBS_SUP) -o $@

# libFuzzer targets: clang, ASan+UBSan, sources compiled straight in.
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 -D_GNU_SOURCE -Iipc -Ischema
$(BUILD)/fuzz/%: tests/fuzz/%.c $(SCHEMA_SRCS) $(IPC_SRCS)
	$(say) FUZZ $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(filter %.c,$^) -lconfig -lnng -lcjson -o $@
# the REST body parser and validator live in the supervisor
$(BUILD)/fuzz/fuzz_rest_body: supervisor/probe_names.c supervisor/probe_names.h

fuzz: $(FUZZ_BINS)

# ---- l7 protocol layer: l7probe's parsers (probes/l7probe/l7_proto.c, proto_*.c) also linked alone
# into their unit tests, fuzzers and benchmark; the capture half (main.c, conn*.c, tls*.c) is not.
L7_PROTO_SRCS := $(filter-out probes/l7probe/main.c probes/l7probe/conn% probes/l7probe/tls%,\
	$(wildcard probes/l7probe/*.c))
LIBL7 := $(BUILD)/lib/libggl7.a
$(LIBL7): $(call obj,$(L7_PROTO_SRCS))
$(BUILD)/tests/test_l7_%: $(BUILD)/obj/tests/unit/test_l7_%.o $(LIBL7)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lcmocka -o $@
# the connection tracker (conn.c) with the protocol layer, fed synthetic events
$(BUILD)/tests/test_l7conn: $(BUILD)/obj/tests/unit/test_l7conn.o $(BUILD)/obj/probes/l7probe/conn.o $(LIBL7) \
			    $(LIBPROBE) $(LIBSCHEMA) $(LIBIPC)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lcmocka $(LIBS_PROBE) -lconfig -o $@
$(BUILD)/obj/tests/unit/test_l7conn.o: $(BUILD)/gen/l7probe.skel.h
$(BUILD)/fuzz/fuzz_l7_%: tests/fuzz/fuzz_l7_%.c tests/fuzz/fuzz_l7.h $(L7_PROTO_SRCS) $(wildcard probes/l7probe/*.h)
	$(say) FUZZ $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Iprobes/l7probe $(filter %.c,$^) -o $@
$(BUILD)/bench/l7_%: $(BUILD)/obj/bench/l7_%.o $(LIBL7)
	$(say) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@

# ---- running and testing --------------------------------------------------------------------------
run: deps all
	$(SUPERVISOR) -c config/gala-gopher.conf

# Everything: unit tests, short fuzz runs, the integration suite, and the integration suite again
# with every binary built with ASan+UBSan (build/san).
test: deps
	$(Q)$(MAKE) --no-print-directory all fuzz
	$(Q)$(MAKE) --no-print-directory BUILD=build/san SAN=1 all
	$(Q)GG_SAN_BUILD=build/san tests/run.sh all

test-unit: all
	$(Q)tests/run.sh unit

test-integration: all
	$(Q)tests/run.sh integration

# The integration suite again, every binary built with ASan+UBSan into build/san.
test-san: deps
	$(Q)$(MAKE) --no-print-directory BUILD=build/san SAN=1 all
	$(Q)GG_BUILD=build/san tests/run.sh integration

bench: all
	$(Q)bench/run.sh

lint:
	$(Q)clang-format --dry-run --Werror $(shell git ls-files '*.c' '*.h')
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --suppress=missingIncludeSystem -Iipc -Ischema -Iprobes/lib -Ibpf -I$(BUILD)/gen -j2 \
		ipc schema supervisor probes

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
