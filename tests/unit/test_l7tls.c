/* test_l7tls.c - what the TLS uprobes decide from a binary's code (probes/l7probe/tls_elf.c): which
 * instructions the kernel emulates, the call target in OpenSSL 3.0's SSL_read (bytes of Debian 12's
 * libssl.so.3), the entry site and ret sites of a Go function (bytes of go1.19's crypto/tls), and the
 * ELF lookups on this test's own executable. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"

#include "../../probes/l7probe/tls_elf.h"

GG_TEST(test_emulated)
{
	static const uint8_t push_rbp[] = {0x55}, push_r12[] = {0x41, 0x54}, sub_rsp[] = {0x48, 0x83, 0xec, 0x18},
			     call[] = {0xe8, 0, 0, 0, 0}, jbe32[] = {0x0f, 0x86, 0xc2, 3, 0, 0}, jbe8[] = {0x76, 2},
			     ret[] = {0xc3}, cmp_r14[] = {0x49, 0x3b, 0x66, 0x10}, mov_r8[] = {0x41, 0x89, 0xc0};

	assert_int_equal(x86_uprobe_emulated(push_rbp, sizeof(push_rbp)), 1);
	assert_int_equal(x86_uprobe_emulated(push_r12, sizeof(push_r12)), 1);
	assert_int_equal(x86_uprobe_emulated(call, sizeof(call)), 1);
	assert_int_equal(x86_uprobe_emulated(jbe32, sizeof(jbe32)), 1);
	assert_int_equal(x86_uprobe_emulated(jbe8, sizeof(jbe8)), 1);
	assert_int_equal(x86_uprobe_emulated(sub_rsp, sizeof(sub_rsp)), 0);
	assert_int_equal(x86_uprobe_emulated(ret, sizeof(ret)), 0);
	assert_int_equal(x86_uprobe_emulated(cmp_r14, sizeof(cmp_r14)), 0);
	assert_int_equal(x86_uprobe_emulated(mov_r8, sizeof(mov_r8)), 0);
	assert_int_equal(x86_uprobe_emulated(push_rbp, 0), 0);
}

/* SSL_read of libssl.so.3 (OpenSSL 3.0.x, Debian 12) at 0x35430: sub, mov %fs:0x28, mov, xor, test,
 * js, mov, movslq, call 0x35290 (ssl_read_internal). */
GG_TEST(test_first_call)
{
	static const uint8_t ssl_read[] = {0x48, 0x83, 0xec, 0x18, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00,
					   0x00, 0x48, 0x89, 0x44, 0x24, 0x08, 0x31, 0xc0, 0x85, 0xd2, 0x78, 0x2f,
					   0x48, 0x89, 0xe1, 0x48, 0x63, 0xd2, 0xe8, 0x3d, 0xfe, 0xff, 0xff, 0x85};
	static const uint8_t no_call[] = {0x31, 0xc0, 0xc3, 0xe8, 0, 0, 0, 0};
	uint64_t target = 0;

	assert_int_equal(x86_first_call(ssl_read, sizeof(ssl_read), 0x35430, 12, &target), 0);
	assert_int_equal(target, 0x35290);
	/* not past a ret, nor past the instruction budget */
	assert_int_equal(x86_first_call(no_call, sizeof(no_call), 0x1000, 12, &target), -ENOENT);
	assert_int_equal(x86_first_call(ssl_read, sizeof(ssl_read), 0x35430, 5, &target), -ENOENT);
}

/* crypto/tls.(*Conn).Read of go1.19.8 starts: cmp 0x10(%r14),%rsp; jbe morestack; sub $0x68,%rsp. */
GG_TEST(test_entry_site)
{
	static const uint8_t go_read[] = {0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0xc2,
					  0x03, 0x00, 0x00, 0x48, 0x83, 0xec, 0x68};
	/* a large frame: lea -0x20(%rsp),%r12; cmp 0x10(%r14),%r12; jbe */
	static const uint8_t go_big[] = {0x4c, 0x8d, 0x64, 0x24, 0xe0, 0x4d, 0x3b, 0x66, 0x10, 0x76, 0x10};
	/* xor %eax,%eax before the jbe: the first argument is gone */
	static const uint8_t clobber[] = {0x31, 0xc0, 0x76, 0x02};
	uint64_t at = 0;

	assert_int_equal(x86_entry_site(go_read, sizeof(go_read), 0x5a9ce0, 4, &at), 0);
	assert_int_equal(at, 0x5a9ce4);
	assert_int_equal(x86_entry_site(go_big, sizeof(go_big), 0x1000, 4, &at), 0);
	assert_int_equal(at, 0x1009);
	assert_int_equal(x86_entry_site(clobber, sizeof(clobber), 0x1000, 4, &at), -ENOENT);
}

GG_TEST(test_ret_sites)
{
	/* mov $0xc3,%eax (a 0xc3 byte that is not a ret); je +1; ret; xor %ecx,%ecx; ret; int3 padding */
	static const uint8_t code[] = {0xb8, 0xc3, 0x00, 0x00, 0x00, 0x74, 0x01, 0xc3, 0x31, 0xc9, 0xc3, 0xcc, 0xcc};
	static const uint8_t bad[] = {0x31, 0xc9, 0xc3, 0x0f};
	uint64_t rets[4];
	unsigned int n = 0;

	assert_int_equal(x86_ret_sites(code, sizeof(code), 0x2000, rets, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rets[0], 0x2007);
	assert_int_equal(rets[1], 0x200a);
	assert_int_equal(x86_ret_sites(code, sizeof(code), 0x2000, rets, 1, &n), -E2BIG);
	/* code that does not decode to its end cannot be trusted */
	assert_int_equal(x86_ret_sites(bad, sizeof(bad), 0x2000, rets, 4, &n), -EILSEQ);
}

int tls_elf_test_marker(int x);
__attribute__((noinline, used)) int tls_elf_test_marker(int x)
{
	return x * 3 + 1;
}

GG_TEST(test_elf_self)
{
	struct elf_bin *b = NULL;
	struct elf_fn fn;
	uint8_t code[4], mem[4];

	assert_int_equal(elf_bin__open("/proc/self/exe", &b), 0);
	assert_int_equal(elf_bin__find(b, "tls_elf_test_marker", &fn), 0);
	assert_true(fn.size > 0);
	assert_int_equal(elf_bin__read(b, fn.vaddr, code, sizeof(code)), 0);
	/* the file's bytes are the function's: compare with the loaded code (PIE: same offset from main) */
	memcpy(mem, (const void *)tls_elf_test_marker, sizeof(mem));
	assert_memory_equal(code, mem, sizeof(code));
	assert_int_equal(elf_bin__has_section(b, ".go.buildinfo"), 0);
	assert_int_equal(elf_bin__has_section(b, ".text"), 1);
	assert_int_equal(elf_bin__find(b, "no_such_function_here", &fn), -ENOENT);
	elf_bin__close(b);
	elf_bin__close(NULL);
	assert_true(elf_bin__open("/nonexistent/binary", &b) < 0);
}

/* Read's result slot from its open-coded defer calls (go1.19's crypto/tls.(*Conn).Read epilogues). */
GG_TEST(test_defer_result_slot)
{
	/* mov 0x58(%rsp),%rdx; mov (%rdx),%rax; call *%rax; mov 0x20(%rsp),%rax; mov 0x38(%rsp),%rbx;
	 * add $0x68,%rsp; ret; ... the same again */
	static const uint8_t two[] = {0x48, 0x8b, 0x54, 0x24, 0x58, 0x48, 0x8b, 0x02, 0xff, 0xd0, 0x48,
				      0x8b, 0x44, 0x24, 0x20, 0x48, 0x8b, 0x5c, 0x24, 0x38, 0x48, 0x83,
				      0xc4, 0x68, 0xc3, 0xff, 0xd0, 0x48, 0x8b, 0x44, 0x24, 0x20, 0xc3};
	/* the second reload from another slot */
	static const uint8_t differ[] = {0xff, 0xd0, 0x48, 0x8b, 0x44, 0x24, 0x20,
					 0xff, 0xd0, 0x48, 0x8b, 0x44, 0x24, 0x28};
	/* something else after the call */
	static const uint8_t other[] = {0xff, 0xd0, 0x48, 0x89, 0xc3, 0xc3};
	/* direct calls only */
	static const uint8_t none[] = {0xe8, 0x00, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x44, 0x24, 0x20, 0xc3};
	int64_t disp = -1;

	assert_int_equal(x86_defer_result_slot(two, sizeof(two), 0x5a603b, &disp), 0);
	assert_int_equal(disp, 0x20);
	assert_int_equal(x86_defer_result_slot(differ, sizeof(differ), 0x1000, &disp), -EINVAL);
	assert_int_equal(x86_defer_result_slot(other, sizeof(other), 0x1000, &disp), -EINVAL);
	assert_int_equal(x86_defer_result_slot(none, sizeof(none), 0x1000, &disp), -ENOENT);
}
