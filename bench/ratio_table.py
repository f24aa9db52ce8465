#!/usr/bin/env python3
"""One Markdown table of Ignis against PyTorch from the JSON lines of the compare scripts.

Reads result lines ({"engine": "ignis"|"torch", "row": ..., and a cost: "seconds" per step or
for the whole task, or "bytes"}) from the files named, skipping other lines. A row's key is its
name, its device ("cpu" unless given) and its thread count when given; PyTorch lines may name a
"variant" (eager, graphs, compile); Ignis's lines may too (eager, or graphs for a step run
through cuda::capture_step), and its faster one is shown, marked "captured" when so. Where a
row was measured more than once, the lowest cost counts (the round least disturbed by the rest
of the machine). Each PyTorch variant gets a
column and a ratio column: PyTorch's cost / Ignis's cost, so > 1 means Ignis is ahead. Peak
memory (peak_MiB on a GPU, peak_rss_mb on the CPU) is shown as Ignis / PyTorch eager.

Usage: ratio_table.py FILE.jsonl...
"""
import json
import sys

VARIANTS = [("eager", "PyTorch"), ("graphs", "PyTorch + CUDA graph"),
            ("compile", "torch.compile")]


def cost(r):
    """The cost of a result line, in seconds or bytes; lower is better."""
    return r["bytes"] if "bytes" in r else r["seconds"]


def shown(r):
    if r is None:
        return "–"
    if "bytes" in r:
        return "%.1f MB" % (r["bytes"] / 1e6)
    s = r["seconds"]
    text = "%.3g ms" % (s * 1e3) if s < 1 else "%.1f s" % s
    if "accuracy" in r:
        text += " (%.2f%%)" % (100 * r["accuracy"])
    return text


def memory(r):
    for key in ("peak_MiB", "peak_rss_mb"):
        if key in r:
            return r[key]
    return None


def main(paths):
    best, order = {}, []
    for path in paths:
        for line in open(path):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "row" not in r or ("seconds" not in r and "bytes" not in r):
                continue
            key = (r["row"], r.get("device", "cpu"), r.get("threads"))
            who = "ignis" if r["engine"] == "ignis" else r.get("variant", "eager")
            if key not in order:
                order.append(key)
            old = best.setdefault(key, {}).get(who)
            if old is None or cost(r) < cost(old):
                best[key][who] = r
    used = [(v, name) for v, name in VARIANTS if any(v in e for e in best.values())]
    head = ["workload", "device", "Ignis"]
    for _, name in used:
        head += [name, name + " / Ignis"]
    head.append("peak memory Ignis / PyTorch")
    print("| " + " | ".join(head) + " |")
    print("| --- | --- |" + " ---: |" * (len(head) - 2))
    for key in order:
        row, device, threads = key
        e = best[key]
        ig = e.get("ignis")
        cells = [row + ("" if "note" not in (ig or {}) else " (%s)" % ig["note"]),
                 device + ("" if threads is None else ", %d thread%s" % (threads, "s" * (threads > 1))),
                 shown(ig) + (" (captured)" if (ig or {}).get("variant") == "graphs" else "")]
        for v, _ in used:
            pt = e.get(v)
            cells.append(shown(pt))
            cells.append("**%.2f**" % (cost(pt) / cost(ig)) if ig and pt else "–")
        m_ig, m_pt = memory(ig or {}), memory(e.get("eager") or {})
        cells.append("%.0f / %.0f" % (m_ig, m_pt) if m_ig is not None and m_pt is not None else "–")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: ratio_table.py FILE.jsonl...")
    main(sys.argv[1:])
