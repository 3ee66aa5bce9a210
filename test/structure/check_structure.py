#!/usr/bin/env python3
"""Checks the runtime's structure rules on a source tree, and that the checks can fail.

  check_structure.py ROOT        checks the tree at ROOT; exits 1 naming every file or function that breaks a rule
  check_structure.py --self-test builds a small tree that breaks each rule once and exits 1 unless each is named

The rules (docs/design.md, "Where the code is"):
- the runtime (src/ without cli, models, programs, plan and bench) has no file over 500 lines, and no function
  over 60;
- only the cluster's life (src/cluster/), the serve loop and reduce_sum's front door include cluster_state.hpp:
  the commands reach their rank through rank_context and their own state;
- the commands (src/map_rect/, src/reduce_sum/, src/worker/) call no MPI function themselves: their messages
  are the protocol's steps and the claims engine's;
- every message tag on a cluster's communicator is defined in src/protocol/tags.hpp (the sampler's chains talk
  on communicators of their own);
- every folder of src/ has its row in the README's layout table, and every src/ row names a folder that exists.
"""
import os
import re
import sys
import tempfile

NOT_RUNTIME = {"cli", "models", "programs", "plan", "bench"}
COMMANDS = {"map_rect", "reduce_sum", "worker"}
MAY_SEE_CLUSTER = ("src/cluster/", "src/worker/serve.cpp", "src/reduce_sum/reduce_root.cpp")
TAGS = "src/protocol/tags.hpp"
OWN_COMMUNICATORS = ("src/sampling/",)
MOST_FILE_LINES = 500
MOST_FUNCTION_LINES = 60


def runtime_files(root):
    """The runtime's C++ files, as paths relative to root."""
    for folder in sorted(os.listdir(os.path.join(root, "src"))):
        if folder in NOT_RUNTIME or not os.path.isdir(os.path.join(root, "src", folder)):
            continue
        for name in sorted(os.listdir(os.path.join(root, "src", folder))):
            if name.endswith((".cpp", ".hpp")):
                yield f"src/{folder}/{name}"


def code_of(line):
    """A line without its comment and with its string and character literals emptied."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def functions(text):
    """(first line, lines) of each function body: a brace opened after a closing parenthesis on its line or the
    line before, outside any other function, that does not open a namespace, class, struct, union or enum."""
    depth, start, start_depth, before = 0, None, 0, ""
    for number, line in enumerate(text.split("\n"), 1):
        code = code_of(line)
        for at, ch in enumerate(code):
            if ch == "{":
                head = before + code[:at]
                if start is None and ")" in head and not re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$",
                                                                      code[:at]):
                    start, start_depth = number, depth
                depth += 1
            elif ch == "}":
                depth -= 1
                if start is not None and depth == start_depth:
                    yield start, number - start + 1
                    start = None
        before = code


def readme_folders(root):
    """The src/ folders named in the README's layout table."""
    with open(os.path.join(root, "README.md")) as f:
        return set(re.findall(r"^\| `src/([a-z_]+)/` \|", f.read(), re.MULTILINE))


def check(root):
    """Every breach of the rules in the tree at root, one line each."""
    found = []
    for path in runtime_files(root):
        with open(os.path.join(root, path)) as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MOST_FILE_LINES:
            found.append(f"{path}: {lines} lines, more than {MOST_FILE_LINES}")
        for first, length in functions(text):
            if length > MOST_FUNCTION_LINES:
                found.append(f"{path}:{first}: a function of {length} lines, more than {MOST_FUNCTION_LINES}")
        if '#include "src/cluster/cluster_state.hpp"' in text and not path.startswith(MAY_SEE_CLUSTER):
            found.append(f"{path}: includes cluster_state.hpp; a command takes rank_context and its own state")
        if path != TAGS and not path.startswith(OWN_COMMUNICATORS):
            for number, line in enumerate(text.split("\n"), 1):
                if re.search(r"\bconstexpr\s+int\s+\w*tag\w*\s*=", code_of(line)):
                    found.append(f"{path}:{number}: defines a message tag; every tag is in {TAGS}")
        folder = path.split("/")[1]
        if folder in COMMANDS:
            for number, line in enumerate(text.split("\n"), 1):
                call = re.search(r"\bMPI_[A-Z][a-z_]*\s*\(", code_of(line))
                if call:
                    found.append(f"{path}:{number}: calls {call.group(0)[:-1].strip()}; a command's messages are the "
                                 "protocol's steps")
    folders = {d for d in os.listdir(os.path.join(root, "src")) if os.path.isdir(os.path.join(root, "src", d))}
    listed = readme_folders(root)
    for d in sorted(folders - listed):
        found.append(f"README.md: the layout table has no row for src/{d}/")
    for d in sorted(listed - folders):
        found.append(f"README.md: the layout table names src/{d}/, which does not exist")
    return found


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as f:
        f.write(text)


def self_test():
    """A tree that breaks each rule once (and a long function outside the runtime, which is allowed)."""
    long_body = "".join(f"  x += {i};\n" for i in range(59))
    with tempfile.TemporaryDirectory() as root:
        write(root, "README.md", "".join(f"| `src/{d}/` | x |\n" for d in
                                         ("map_rect", "cli", "balance", "protocol", "sampling", "gone")))
        write(root, "src/map_rect/long.cpp", "namespace a {\nint f(int x) {\n" + long_body + "  return x;\n}\n}\n")
        fits_body = "".join(f"  x += {i};\n" for i in range(57))
        write(root, "src/map_rect/fits.cpp", "int g(int x) {\n" + fits_body + "  return x;\n}\n")  # 60 lines
        write(root, "src/map_rect/big.hpp", "// a line\n" * 501)
        write(root, "src/map_rect/reach.cpp", '#include "src/cluster/cluster_state.hpp"\n')
        send = "void h() {\n  MPI_Send(nullptr, 0, MPI_INT, 0, 0, comm);  // MPI_Recv(\n}\n"
        write(root, "src/map_rect/send.cpp", send)
        write(root, "src/balance/tag.hpp", "constexpr int late_tag = 99;\n")
        write(root, "src/protocol/tags.hpp", "constexpr int error_tag = 0;\n")
        write(root, "src/sampling/chains.cpp", "constexpr int chain_tag = 7;\n")
        write(root, "src/cli/long.cpp", "int f(int x) {\n" + long_body * 2 + "  return x;\n}\n")
        write(root, "src/unlisted/x.cpp", "")
        found = check(root)
    expected = ["src/map_rect/long.cpp:2: a function of 62 lines", "src/map_rect/big.hpp: 501 lines",
                "src/map_rect/reach.cpp: includes cluster_state.hpp", "src/map_rect/send.cpp:2: calls MPI_Send",
                "src/balance/tag.hpp:1: defines a message tag",
                "README.md: the layout table has no row for src/unlisted/",
                "README.md: the layout table names src/gone/, which does not exist"]
    missing = [e for e in expected if not any(f.startswith(e) for f in found)]
    extra = [f for f in found if not any(f.startswith(e) for e in expected)]
    for m in missing:
        print(f"self-test: not found: {m}")
    for e in extra:
        print(f"self-test: found wrongly: {e}")
    return 1 if missing or extra else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        sys.exit("usage: check_structure.py ROOT | --self-test")
    found = check(sys.argv[1])
    for line in found:
        print(line)
    print(f"{len(found)} breaches of the structure rules" if found else "the structure rules hold")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
