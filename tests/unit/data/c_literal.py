"""c_literal.py - what the *_gen.py writers of this folder share: bytes printed as a C string macro."""


def emit(name, data):
    """#define name as the string literal of data (96 escapes a line), after a comment of its size."""
    lit = ''.join('\\x%02x' % b for b in data)
    lines = [lit[k:k + 96] for k in range(0, len(lit), 96)]
    print('/* %d bytes */' % len(data))
    print('#define %s \\' % name)
    print(' \\\n'.join('\t"%s"' % ln for ln in lines))
    print()
