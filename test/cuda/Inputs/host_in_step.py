#!/usr/bin/env python3
"""Counts what the host does inside a training step, in the IR printed after
triax-insert-host-syncs (triaxc --target cuda --emit=mlir-after=...).

The step is the entry functions named on the command line (default: the
training entries triax_forward_backward and triax_optimizer_step) and every
function they call, transitively. In them it counts the calls of
trx_cuda_host_sync and the memref.load / memref.store / memref.copy ops
outside a gpu.launch body (host code touching memory). Prints one line:

  step functions: N, host syncs: S, host loads: L, host stores: T, host copies: C

then, with -v, one line per function that has any.
"""
import re
import sys

FUNC = re.compile(r'^\s*func\.func (?:private )?@([\w.$]+)\(')
CALL = re.compile(r'call @([\w.$]+)\(')


def functions(text):
    """{name: [lines of its body]} of the module's func.func ops."""
    table, current = {}, None
    for line in text.splitlines():
        m = FUNC.match(line)
        if m:
            current = m.group(1)
            table[current] = []
        elif current is not None:
            table[current].append(line)
    return table


def counts(lines):
    """Host syncs and host memory accesses of one function body."""
    c = {'syncs': 0, 'loads': 0, 'stores': 0, 'copies': 0}
    depth, launches = 0, []  # brace depth, depths at which launches opened
    for line in lines:
        s = line.strip()
        if 'call @trx_cuda_host_sync(' in s:
            c['syncs'] += 1
        if not launches:
            if re.search(r'\bmemref\.load\b', s):
                c['loads'] += 1
            if re.search(r'\bmemref\.store\b', s):
                c['stores'] += 1
            if re.search(r'\bmemref\.copy\b', s):
                c['copies'] += 1
        if re.search(r'\bgpu\.launch\b', s) and s.endswith('{'):
            launches.append(depth)
        depth += line.count('{') - line.count('}')
        while launches and depth <= launches[-1]:
            launches.pop()
    return c


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('-')]
    verbose = '-v' in sys.argv[1:]
    table = functions(sys.stdin.read())
    entries = args or ['triax_forward_backward', 'triax_optimizer_step']
    missing = [e for e in entries if e not in table]
    if missing:
        print('error: no function', ', '.join(missing), 'in the input')
        return 1
    seen, work = set(), list(entries)
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in table[name]:
            work.extend(c for c in CALL.findall(line) if table.get(c))
    total = {'syncs': 0, 'loads': 0, 'stores': 0, 'copies': 0}
    per_function = []
    for name in sorted(seen):
        c = counts(table[name])
        for k in total:
            total[k] += c[k]
        if any(c.values()):
            per_function.append((name, c))
    print('step functions: {}, host syncs: {syncs}, host loads: {loads}, '
          'host stores: {stores}, host copies: {copies}'.format(
              len(seen), **total))
    if verbose:
        for name, c in per_function:
            print('  {}: {}'.format(name, c))
    return 0


if __name__ == '__main__':
    sys.exit(main())
