"""The ctypes mirrors (mlatune/_capi.py) against the C header.

The header is parsed for its structs (every field of every typedef'd
struct), enums and MLT_ macros; a C program generated from what was found
prints sizeof and offsetof of each field, each enumerator's value and each
macro's, compiled against the header with the system C compiler.  A field,
enumerator, struct, enum or macro added to the header and not to the
mirrors fails here, as does a changed type (size or offsets).  A negative
control adds a field to a copy of the header and expects the check to say
so.
"""

import ctypes
import os
import re
import subprocess
import unittest

import support
from mlatune import _capi


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse_header(text):
    """{struct: [fields]}, {enum: [enumerators]}, [macros with values]."""
    text = _strip_comments(text)
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+\w+\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        fields = []
        for decl in m.group(1).split(";"):
            for piece in decl.split(","):
                name = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", piece.strip())
                if name:
                    fields.append(name.group(1))
        structs[m.group(2)] = fields
    # an enum may be made from an X-macro list (mlatune.h's MLT_STATUS_LIST):
    # its enumerators are the first argument of each X(...) entry
    lists = {}
    for m in re.finditer(r"^\s*#\s*define\s+(\w+_LIST)\(X\)((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
        lists[m.group(1)] = re.findall(r"\bX\((\w+)", m.group(2))
    enums = {}
    for m in re.finditer(r"typedef\s+enum\s+\w+\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        body = m.group(1)
        used = [name for name in lists if re.search(r"\b" + name + r"\(", body)]
        if used:
            enums[m.group(2)] = lists[used[0]]
        else:
            enums[m.group(2)] = [re.match(r"\s*(\w+)", e).group(1) for e in body.split(",") if e.strip()]
    macros = [m.group(1) for m in re.finditer(r"^\s*#\s*define\s+(MLT_\w+)\s+\S", text, re.M)]
    return structs, enums, macros


def c_program(structs, enums, macros):
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "mlatune.h"', "int main(void) {"]
    for s, fields in structs.items():
        lines.append(f'    printf("size {s} %zu\\n", sizeof({s}));')
        for f in fields:
            lines.append(f'    printf("field {s} {f} %zu %zu\\n", offsetof({s}, {f}), sizeof((({s} *)0)->{f}));')
    for e, names in enums.items():
        lines.append(f'    printf("size {e} %zu\\n", sizeof({e}));')
        for n in names:
            lines.append(f'    printf("value {n} %lld\\n", (long long)({n}));')
    for n in macros:
        lines.append(f'    printf("value {n} %lld\\n", (long long)({n}));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def measure(header_path, workdir):
    """Parses the header and runs the generated program: (parsed, sizes,
    fields, values)."""
    with open(header_path) as f:
        parsed = parse_header(f.read())
    src = os.path.join(workdir, "layout.c")
    with open(src, "w") as f:
        f.write(c_program(*parsed))
    exe = os.path.join(workdir, "layout")
    cmd = [support.compiler(), "-std=c11", "-Wall", "-Werror", "-I", os.path.dirname(header_path), "-o", exe, src]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f"compiling the layout program failed:\n{r.stderr}")
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    sizes, fields, values = {}, {}, {}
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "size":
            sizes[rest[0]] = int(rest[1])
        elif kind == "field":
            fields[(rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
        else:
            values[rest[0]] = int(rest[1])
    return parsed, sizes, fields, values


def compare(parsed, sizes, fields, values):
    """Every difference between the header's ABI and the mirrors, as lines."""
    structs, enums, macros = parsed
    problems = []
    for name in sorted(set(structs) ^ set(_capi.STRUCTS)):
        where = "the header" if name in structs else "the mirrors"
        problems.append(f"struct {name} is only in {where}")
    for name in sorted(set(structs) & set(_capi.STRUCTS)):
        mirror = _capi.STRUCTS[name]
        py_fields = [f for f, _ in mirror._fields_]
        if py_fields != structs[name]:
            problems.append(f"{name}: fields in the header {structs[name]}, in the mirror {py_fields}")
        for f in structs[name]:
            if f in py_fields:
                attr = getattr(mirror, f)
                if fields[(name, f)] != (attr.offset, attr.size):
                    problems.append(f"{name}.{f}: C offset/size {fields[(name, f)]}, "
                                    f"mirror {(attr.offset, attr.size)}")
        if sizes[name] != ctypes.sizeof(mirror):
            problems.append(f"{name}: sizeof {sizes[name]} in C, {ctypes.sizeof(mirror)} in the mirror")
    for name in sorted(set(enums) ^ set(_capi.ENUMS)):
        problems.append(f"enum {name} is only in {'the header' if name in enums else 'the mirrors'}")
    for name in sorted(set(enums) & set(_capi.ENUMS)):
        mirror, prefix = _capi.ENUMS[name]
        if sizes[name] != ctypes.sizeof(ctypes.c_int):
            problems.append(f"enum {name} is {sizes[name]} bytes, mirrored as int")
        c_members = [(n[len(prefix):], values[n]) for n in enums[name]]
        py_members = [(m.name, m.value) for m in mirror]
        if c_members != py_members:
            problems.append(f"enum {name}: header {c_members}, mirror {py_members}")
    for name in macros:
        if name not in _capi.CONSTANTS:
            problems.append(f"macro {name} is not mirrored")
        elif _capi.CONSTANTS[name] != values[name]:
            problems.append(f"macro {name} is {values[name]} in the header, {_capi.CONSTANTS[name]} in the mirror")
    return problems


@unittest.skipIf(support.compiler() is None, "no C compiler (gcc/cc) to compile the layout program")
@unittest.skipIf(support.header() is None, f"mlatune.h not found in {support.include_dirs()}")
class LayoutTest(unittest.TestCase):

    def test_mirrors_match_the_header(self):
        parsed, sizes, fields, values = measure(support.header(), support.temp_dir())
        structs, enums, macros = parsed
        # the parser found what it should (a parser that finds nothing would pass vacuously)
        self.assertEqual(set(structs), set(_capi.STRUCTS))
        self.assertIn("schedule", structs["mlt_decode_args"])
        self.assertEqual(structs["mlt_decode_args"][-1], "kv_scale_device")
        self.assertEqual((values["MLT_VERSION_MAJOR"], values["MLT_VERSION_MINOR"]), _capi.HEADER_VERSION)
        self.assertIn("key_seq_len", structs["mlt_choice_info"])  # from "int key_batch, key_seq_len;"
        self.assertIn("MLT_LENGTHS_UNKNOWN", macros)
        self.assertEqual(compare(parsed, sizes, fields, values), [])

    def test_an_added_field_is_caught(self):
        with open(support.header()) as f:
            text = f.read()
        edited = text.replace("    const void *schedule;", "    const void *schedule;\n    int added_by_test;", 1)
        self.assertNotEqual(edited, text, "the negative control could not find mlt_decode_args.schedule")
        work = os.path.join(support.temp_dir(), "edited")
        os.makedirs(work, exist_ok=True)
        with open(os.path.join(work, "mlatune.h"), "w") as f:
            f.write(edited)
        problems = compare(*measure(os.path.join(work, "mlatune.h"), work))
        self.assertTrue(any("added_by_test" in p for p in problems), problems)
        self.assertTrue(any("sizeof" in p and "mlt_decode_args" in p for p in problems), problems)

    def test_an_added_enumerator_is_caught(self):
        with open(support.header()) as f:
            text = f.read()
        edited = text.replace("MLT_FP8_E4M3_FNUZ = 3 }", "MLT_FP8_E4M3_FNUZ = 3, MLT_FP4 = 4 }", 1)
        self.assertNotEqual(edited, text, "the negative control could not find mlt_dtype")
        work = os.path.join(support.temp_dir(), "edited-enum")
        os.makedirs(work, exist_ok=True)
        with open(os.path.join(work, "mlatune.h"), "w") as f:
            f.write(edited)
        problems = compare(*measure(os.path.join(work, "mlatune.h"), work))
        self.assertTrue(any("mlt_dtype" in p and "FP4" in p for p in problems), problems)


class FunctionsTest(unittest.TestCase):
    """Every function the header declares is bound by mlatune.Library,
    with the C return type's size."""

    @unittest.skipIf(support.header() is None, "mlatune.h not found")
    def test_every_function_is_bound(self):
        from mlatune import _library
        with open(support.header()) as f:
            text = _strip_comments(f.read())
        text = re.sub(r"^\s*#\s*define[^\n]*(?:\\\n[^\n]*)*", " ", text, flags=re.M)  # macro bodies
        declared = set(re.findall(r"\b(mlt_[a-z_]+)\s*\(", text))
        bound = set(_library._FUNCTIONS) | set(_capi.OPTIONAL_FUNCTIONS)
        self.assertIn("mlt_api_version", declared)
        self.assertIn("mlt_plan_run", declared)
        self.assertEqual(sorted(declared - bound), [], "declared in mlatune.h, not bound by the package")
        self.assertEqual(sorted(bound - declared), [], "bound by the package, not in mlatune.h")


class PackerTest(unittest.TestCase):
    """The per-call packer writes each field where the mirror has it."""

    @staticmethod
    def distinct_values(mirror):
        """(field -> value, the packer's argument list): a distinct value
        per field, array elements included."""
        per_field, flat = {}, []
        for i, (name, ctype) in enumerate(mirror._fields_):
            if issubclass(ctype, ctypes.Array):
                v = tuple((i + 1) * 0x1000 + 8 * k - 16 for k in range(ctype._length_))  # one negative
                flat.extend(v)
            else:
                v = (i + 1) * 0x1000 + i if ctype in (ctypes.c_void_p, ctypes.c_size_t) else -i if i % 2 else i
                flat.append(v)
            per_field[name] = v
        return per_field, flat

    def test_pack_matches_mirror_fields(self):
        packer = _capi.struct_packer(_capi.DecodeArgs)
        per_field, flat = self.distinct_values(_capi.DecodeArgs)
        args = _capi.DecodeArgs.from_buffer_copy(packer.pack(*flat))
        for name, value in per_field.items():
            got = getattr(args, name)
            self.assertEqual(tuple(got) if isinstance(value, tuple) else got, value, name)
        self.assertEqual(tuple(args.q_strides)[0], 0x1000 * 15 - 16)

    def test_head_packer_and_zero_tail(self):
        # plan.py packs a call without views as the fields up to `schedule`
        # with the views' tail as pad bytes (zeros)
        from mlatune import plan
        per_field, flat = self.distinct_values(_capi.DecodeArgs)
        head = flat[:13]
        zeros = [0] * (len(flat) - 13)
        self.assertEqual(plan._PLAIN.pack(*head), plan._ARGS.pack(*head, *zeros))
        self.assertEqual(plan._PLAIN.size, ctypes.sizeof(_capi.DecodeArgs))
        self.assertEqual(len(zeros), len(plan.NO_VIEWS))

    def test_views_packed_in_three_pieces(self):
        # a call of remembered layouts with views: the fields up to q_pe,
        # the 12 strides packed once, kv_scale_device (and the struct's end)
        from mlatune import plan
        per_field, flat = self.distinct_values(_capi.DecodeArgs)
        pieces = (plan._HEAD_PE.pack(*flat[:14]) + plan._STRIDES.pack(*flat[14:26])
                  + plan._KV_SCALE.pack(flat[26]))
        self.assertEqual(len(flat), 27)
        self.assertEqual(pieces, plan._ARGS.pack(*flat))
        args = _capi.DecodeArgs.from_buffer_copy(pieces)
        for name, value in per_field.items():
            got = getattr(args, name)
            self.assertEqual(tuple(got) if isinstance(value, tuple) else got, value, name)

    def test_every_struct_has_a_packer_layout(self):
        for mirror in (_capi.DecodeArgs, _capi.DecodeProblem):
            self.assertEqual(_capi.struct_packer(mirror).size, ctypes.sizeof(mirror))


if __name__ == "__main__":
    unittest.main()
