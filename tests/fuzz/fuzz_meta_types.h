/* fuzz_meta_types.h - the .meta text the record fuzzers start with: table t, one field of each type. */
#ifndef GG_FUZZ_META_TYPES_H
#define GG_FUZZ_META_TYPES_H

/* "version" and the opening of "measurements" with table t; the fuzzer adds its own tables and ");". */
#define FUZZ_META_HEAD_TYPES                                                               \
	"version = \"1.0.0\"\n"                                                            \
	"measurements = (\n"                                                               \
	" { table_name = \"t\"; entity_name = \"e\"; fields = (\n"                         \
	"   { name = \"k\"; type = \"key\"; }, { name = \"l\"; type = \"label\"; },\n"     \
	"   { name = \"g\"; type = \"gauge\"; }, { name = \"c\"; type = \"counter\"; },\n" \
	"   { name = \"h\"; type = \"histogram\"; }, { name = \"s\"; type = \"summary\"; }); },\n"

#endif
