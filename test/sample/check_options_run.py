#!/usr/bin/env python3
"""check_options_run.py WORKDIR COMMAND...: runs `maprect sample` COMMAND (with --save-warmup, --thin and
--metric dense among its arguments) in WORKDIR and checks that
- each chain's CSV holds ceil(warmup / thin) warm-up rows, CmdStan's adaptation block with the dense inverse
  metric (one line per row), then ceil(samples / thin) draws, and says save_warmup = 1, thin, metric = dense_e;
- the summary recovers the known posterior: eight_schools' mu and tau within 4 MCSE (ours and the reference's
  combined) of posteriordb's reference means; logreg's alpha and beta within 3.5 posterior sds of the truth."""
import glob
import math
import os
import subprocess
import sys

# posteriordb eight_schools-eight_schools_noncentered reference: mean and MCSE of 10,000 draws.
EIGHT_SCHOOLS = {'mu': (4.41051833695493, 0.0330374705950917), 'tau': (3.60205952364059, 0.0318615135640706)}


def fail(message):
    print('FAIL: ' + message)
    sys.exit(1)


def argument(command, name, default):
    return command[command.index(name) + 1] if name in command else default


def check_csv(path, warmup, samples, thin):
    lines = open(path).read().split('\n')
    config = dict(l.lstrip('# ').split(' = ', 1) for l in lines if l.startswith('#') and ' = ' in l)
    for key, value in (('save_warmup', '1'), ('thin', str(thin)), ('metric', 'dense_e')):
        if config.get(key, '').replace(' (Default)', '') != value:
            fail('%s: %s = %r, expected %s' % (path, key, config.get(key), value))
    body = [l for l in lines if l and not l.startswith('#')][1:]
    kept_warmup, kept = -(-warmup // thin), -(-samples // thin)
    if len(body) != kept_warmup + kept:
        fail('%s: %d draw rows, expected %d warm-up + %d' % (path, len(body), kept_warmup, kept))
    start = lines.index('# Elements of inverse mass matrix:')
    rows = [l for l in lines[:start] if l and not l.startswith('#')][1:]
    if len(rows) != kept_warmup:
        fail('%s: %d rows before the adaptation block, expected %d' % (path, len(rows), kept_warmup))
    dim = len(lines[start + 1].split(','))
    matrix = [[float(x) for x in lines[start + 1 + r][1:].split(',')] for r in range(dim)]
    if any(abs(matrix[i][j] - matrix[j][i]) > 1e-12 * abs(matrix[i][j]) for i in range(dim) for j in range(dim)):
        fail('%s: the inverse metric is not symmetric' % path)
    return dim


def summary_rows(output):
    rows = {}
    for line in output.split('\n'):
        f = line.split()
        if len(f) == 10:
            try:
                rows[f[0]] = [float(x) for x in f[1:]]
            except ValueError:
                pass
    return rows


def main():
    work, command = sys.argv[1], sys.argv[2:]
    os.makedirs(work, exist_ok=True)
    run = subprocess.run(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout)
    if run.returncode != 0:
        fail('exit %d' % run.returncode)
    model = argument(command, '--model', 'logreg')
    warmup, samples = int(argument(command, '--warmup', 1000)), int(argument(command, '--samples', 1000))
    thin = int(argument(command, '--thin', 1))
    files = sorted(glob.glob(os.path.join(work, argument(command, '--output-dir', 'output'), model + '-*.csv')))
    if not files:
        fail('no CSV files')
    for path in files:
        dim = check_csv(path, warmup, samples, thin)
        print('ok: %s: warm-up rows, a %d x %d dense metric, draws' % (path, dim, dim))
    rows = summary_rows(run.stdout)
    if model == 'eight_schools':
        for name, (reference, reference_mcse) in EIGHT_SCHOOLS.items():
            mean, mcse = rows[name][0], rows[name][1]
            if abs(mean - reference) >= 4 * math.hypot(mcse, reference_mcse):
                fail('%s: mean %g (mcse %g), reference %g' % (name, mean, mcse, reference))
            print('ok: %s mean %g (mcse %g), reference %g' % (name, mean, mcse, reference))
    else:
        truth = dict((l.split()[1], float(l.split()[3])) for l in run.stdout.split('\n') if l.startswith('true '))
        for name in ('alpha', 'beta'):
            mean, sd = rows[name][0], rows[name][2]
            if abs(mean - truth[name]) >= 3.5 * sd:
                fail('%s: mean %g (sd %g), truth %g' % (name, mean, sd, truth[name]))
            print('ok: %s mean %g (sd %g), truth %g' % (name, mean, sd, truth[name]))
    for name, r in rows.items():
        # A sampler column other than lp__ may be constant within each chain (stepsize__ after adaptation):
        # its R-hat is no convergence figure.
        if name.endswith('__') and name != 'lp__':
            continue
        if not r[-1] < 1.02:
            fail('%s: R-hat %g' % (name, r[-1]))


main()
