"""Latency-percentile plot for the bench report: kernel vs the goxio variants.

latency_plot draws one panel per test (two per row), one line per variant, percentiles on a
"nines" axis (p50, p90, p99, p99.9, ..., then max) and microseconds on a log axis. It uses
matplotlib when the interpreter has it (Debian's python3-matplotlib) and writes the
same picture as a hand-made SVG otherwise, with the standard library only.
"""

import math
import os

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def _nines(p):
    return -math.log10(1.0 - p / 100.0)


def _label(p):
    return "p" + (f"{p:.3f}".rstrip("0").rstrip("."))


def _panels(series):
    """Groups "Proto test, variant" keys into {panel: [(variant, values)]} in order."""
    panels = {}
    for key, values in series.items():
        panel, _, variant = key.partition(", ")
        panels.setdefault(panel, []).append((variant, values))
    return panels


def _colors(series):
    """One color per variant, the same in every panel."""
    order = []
    for key in series:
        variant = key.partition(", ")[2]
        if variant not in order:
            order.append(variant)
    return {v: COLORS[i % len(COLORS)] for i, v in enumerate(order)}


def axis(pcts, with_max=True):
    """x positions ("nines": p90 -> 1, p99 -> 2, ...) and labels of percentiles pcts, then "max"
    one step after the last percentile when with_max."""
    xs = [_nines(p) for p in pcts]
    labels = [_label(p) for p in pcts]
    if with_max:
        xs.append(xs[-1] + 1.0)
        labels.append("max")
    return xs, labels


def latency_plot(series, pcts, outdir, title, with_max=True):
    """Writes latency.png (matplotlib) or latency.svg into outdir and returns its path.

    series maps "panel, variant" to the latencies at pcts (then the maximum when with_max)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator
    except ImportError:
        return _svg(series, pcts, outdir, title, with_max)
    for stale in ("latency.svg",):
        path = os.path.join(outdir, stale)
        if os.path.exists(path):
            os.remove(path)
    panels = _panels(series)
    colors = _colors(series)
    xs, labels = axis(pcts, with_max)
    cols = min(2, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.4 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    for ax, (panel, lines) in zip(flat, panels.items()):
        for variant, values in lines:
            pts = [(x, v) for x, v in zip(xs, values) if not math.isnan(v)]
            ax.plot([x for x, _ in pts], [v for _, v in pts], marker="o", color=colors[variant],
                    label=variant)
        ax.set_title(panel)
        ax.set_xticks(xs)
        ax.set_xticklabels(labels)
        ax.set_yscale("log")
        # "%g": 0.5 stays 0.5 (the default scalar formatter prints sub-1 ticks as 0).
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_ylabel("latency, us (half round trip)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path = os.path.join(outdir, "latency.png")
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def _svg(series, pcts, outdir, title, with_max):
    stale = os.path.join(outdir, "latency.png")
    if os.path.exists(stale):
        os.remove(stale)
    panels = _panels(series)
    colors = _colors(series)
    pw, ph, ml, mr, mt, mb = 420, 300, 70, 30, 50, 45
    width, height = pw * len(panels), ph + 30
    xs, labels = axis(pcts, with_max)
    xmin, xmax = min(xs), max(xs)
    vals = [v for lines in panels.values() for _, vs in lines for v in vs if v > 0 and not math.isnan(v)]
    lo = math.floor(math.log10(min(vals))) if vals else 0
    hi = math.ceil(math.log10(max(vals))) if vals else 1
    if hi == lo:
        hi += 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14">{title}</text>']
    for n, (panel, lines) in enumerate(panels.items()):
        x0, y0 = n * pw + ml, mt
        w, h = pw - ml - mr, ph - mt - mb + 30

        def px(x):
            return x0 + (x - xmin) / (xmax - xmin) * w

        def py(v):
            return y0 + h - (math.log10(v) - lo) / (hi - lo) * h

        out.append(f'<text x="{x0 + w / 2}" y="{y0 - 8}" text-anchor="middle" font-size="12">{panel}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="black"/>')
        for e in range(lo, hi + 1):
            y = py(10 ** e)
            out.append(f'<line x1="{x0}" y1="{y}" x2="{x0 + w}" y2="{y}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{10 ** e:g}</text>')
        for x, lab in zip(xs, labels):
            out.append(f'<line x1="{px(x)}" y1="{y0}" x2="{px(x)}" y2="{y0 + h}" stroke="#eee"/>')
            out.append(f'<text x="{px(x)}" y="{y0 + h + 15}" text-anchor="middle">{lab}</text>')
        out.append(f'<text x="{x0 - 50}" y="{y0 + h / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 {x0 - 50} {y0 + h / 2})">latency, us (half round trip)</text>')
        for i, (variant, values) in enumerate(lines):
            color = colors[variant]
            pts = [(px(x), py(v)) for x, v in zip(xs, values) if v > 0 and not math.isnan(v)]
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                       % (color, " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)))
            out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>' for a, b in pts]
            out.append(f'<text x="{x0 + 10}" y="{y0 + 15 + 14 * i}" fill="{color}">{variant}</text>')
    out.append("</svg>")
    path = os.path.join(outdir, "latency.svg")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path
