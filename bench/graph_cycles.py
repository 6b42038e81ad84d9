"""Strongly connected components (Tarjan's algorithm, iterative so deep graphs do not hit the recursion
limit): the cycles of a directed graph. Used by the transaction anomaly checker (bench/txn_anomalies.py)
and the import-circle check (tests/test_structure.py)."""
from __future__ import annotations


def cycles(graph: dict) -> list[list]:
    """The components of more than one node, each sorted; `graph` maps a node to its successors (a
    successor missing from the keys has none)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out
