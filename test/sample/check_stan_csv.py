#!/usr/bin/env python3
"""check_stan_csv.py FILE NUM_SAMPLES COLUMN...: reads a Stan CSV the way CmdStanPy's from_csv does
(cmdstanpy.utils.stancsv: scan_config, scan_column_names, scan_hmc_params, scan_sampling_iters, then
check_sampler_csv's checks) and the way cmdstanr's read_cmdstan_csv finds the step size, metric and timing,
and checks that the first model columns are COLUMN... (CmdStanPy's names, e.g. theta[1] for theta.1)."""
import re
import sys


def scan_config(lines, i, config):
    # cmdstanpy: every leading '#' line; "(Default)" dropped; 'key = value' split once; ints and floats parsed.
    while i < len(lines) and lines[i].startswith('#'):
        line = lines[i].strip()
        if line.endswith('(Default)'):
            line = line.replace('(Default)', '')
        key_val = line.lstrip(' #\t').split('=')
        if len(key_val) == 2:
            key, raw = key_val[0].strip(), key_val[1].strip()
            if key == 'file' and not raw.endswith('csv'):
                config['data_file'] = raw
            elif key != 'file':
                for cast in (int, float, str):
                    try:
                        config[key] = cast(raw)
                        break
                    except ValueError:
                        pass
        i += 1
    return i


def munge(name):
    # cmdstanpy.utils.munge_varname: theta.1.2 -> theta[1,2]
    if '.' not in name:
        return name
    head, *rest = name.split('.')
    return head + '[' + ','.join(rest) + ']'


def fail(message):
    print('FAIL: ' + message)
    sys.exit(1)


def main():
    path, num_samples, expected = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    lines = open(path).read().split('\n')
    config = {}
    i = scan_config(lines, 0, config)
    for key in ('stan_version_major', 'model', 'method', 'num_samples', 'num_warmup', 'save_warmup', 'thin',
                'max_depth', 'delta', 'metric', 'engine', 'algorithm', 'id', 'seed'):
        if key not in config:
            fail('config has no ' + key)
    if config['method'] != 'sample' or config['metric'] != 'diag_e' or config['engine'] != 'nuts':
        fail('method/metric/engine: %s/%s/%s' % (config['method'], config['metric'], config['engine']))
    names = [munge(n) for n in lines[i].strip().split(',')]
    i += 1
    sampler = ['lp__', 'accept_stat__', 'stepsize__', 'treedepth__', 'n_leapfrog__', 'divergent__', 'energy__']
    if names[:7] != sampler:
        fail('sampler columns: %s' % names[:7])
    if names[7:7 + len(expected)] != expected:
        fail('model columns: %s, expected %s' % (names[7:7 + len(expected)], expected))
    # scan_hmc_params
    if lines[i].strip() != '# Adaptation terminated':
        fail('line %d: expecting metric, found "%s"' % (i + 1, lines[i]))
    label, step = lines[i + 1].strip().split('=')
    if not label.startswith('# Step size'):
        fail('line %d: expecting step size' % (i + 2))
    step = float(step)
    if lines[i + 2].strip() != '# Diagonal elements of inverse mass matrix:':
        fail('line %d: expecting the diagonal metric' % (i + 3))
    metric = [float(x) for x in lines[i + 3].lstrip(' #\t').split(',')]
    i += 4
    # scan_sampling_iters
    draws = 0
    while i < len(lines) and lines[i].strip() and not lines[i].startswith('#'):
        row = lines[i].strip().split(',')
        if len(row) != len(names):
            fail('line %d: bad draw, expecting %d items, found %d' % (i + 1, len(names), len(row)))
        values = [float(x) for x in row]
        if values[2] != step:
            fail('line %d: stepsize__ %r differs from the adaptation block %r' % (i + 1, values[2], step))
        draws += 1
        i += 1
    # check_sampler_csv
    if draws != num_samples or config['num_samples'] != num_samples:
        fail('%d draws, num_samples %s, expected %d' % (draws, config['num_samples'], num_samples))
    # cmdstanr's read_cmdstan_csv: timing from the "Elapsed Time" lines
    timing = re.findall(r'#\s+(?:Elapsed Time: )?([0-9.e+-]+) seconds \((Warm-up|Sampling|Total)\)', '\n'.join(lines[i:]))
    if [t[1] for t in timing] != ['Warm-up', 'Sampling', 'Total']:
        fail('timing block: %s' % timing)
    print('ok: %s: %d columns, %d draws, step size %g, %d metric entries, %s s in all'
          % (path, len(names), draws, step, len(metric), timing[2][0]))


main()
