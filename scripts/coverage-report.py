#!/usr/bin/env python3
"""Lines that no test executed, from the .gcda counts of a --coverage build (scripts/coverage.sh).

usage: coverage-report.py ROOT BUILD [--lines]

Reads every .gcda under BUILD through `gcov --json-format --stdout`, sums each source line's counts over
every object that compiled it (a header's lines over every test that includes it), and prints per file of
ROOT's src/ and include/maprect/ how many of its executable lines ran never: the library's files first
(include/maprect/, and src/ without cli, models, programs, plan and bench), then the programs'. With --lines,
every never-run line follows its file's count.
"""
import collections
import glob
import json
import os
import subprocess
import sys

PROGRAMS = ('src/cli/', 'src/models/', 'src/programs/', 'src/plan/', 'src/bench/')


def line_counts(root, build):
    """{source path relative to root: {line: count}} over every .gcda of build."""
    counts = collections.defaultdict(lambda: collections.defaultdict(int))
    for gcda in glob.glob(os.path.join(build, '**', '*.gcda'), recursive=True):
        out = subprocess.run(['gcov', '--json-format', '--stdout', '--object-directory', os.path.dirname(gcda),
                              gcda], capture_output=True, text=True, cwd=build, check=False)
        for record in out.stdout.splitlines():
            if not record.startswith('{'):
                continue
            data = json.loads(record)
            base = data.get('current_working_directory', build)
            for f in data['files']:
                path = os.path.relpath(os.path.normpath(os.path.join(base, f['file'])), root)
                if not path.startswith(('src/', 'include/maprect/')):
                    continue
                for line in f['lines']:
                    counts[path][line['line_number']] += line['count']
    return counts


def report(root, counts, with_lines):
    """Prints the never-run lines per file, the library's first."""
    library = sorted(p for p in counts if not p.startswith(PROGRAMS))
    programs = sorted(p for p in counts if p.startswith(PROGRAMS))
    for title, paths in (('library', library), ('programs', programs)):
        never_total = lines_total = 0
        print(f'== {title}')
        for path in paths:
            never = sorted(n for n, c in counts[path].items() if c == 0)
            never_total += len(never)
            lines_total += len(counts[path])
            if not never:
                continue
            print(f'{path}: {len(never)} of {len(counts[path])} lines never run')
            if with_lines:
                text = open(os.path.join(root, path), encoding='utf-8').read().split('\n')
                for n in never:
                    print(f'  {n:5d}  {text[n - 1].strip()[:110]}')
        print(f'{title}: {never_total} of {lines_total} executable lines never run\n')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split('\n\n')[1])
    root, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    counts = line_counts(root, build)
    if not counts:
        sys.exit(f'coverage-report: no .gcda counts under {build}: build with --coverage and run the tests first')
    report(root, counts, '--lines' in sys.argv[3:])


if __name__ == '__main__':
    main()
