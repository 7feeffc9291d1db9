"""The loss trajectory as a picture: L, D, P and Ω by round, each round labelled with its directive.

Why hand-written SVG: the picture is a handful of polylines and labels, and a plotting library
(matplotlib and its native wheels) would be the heaviest dependency artoo has, loaded into
every run.  The SVG goes into a markdown artifact as a base64 ``data:image/svg+xml`` image,
which the Prefect UI's markdown renderer displays (an ``<img>`` data URI survives its
sanitiser), so the run's page shows the trajectory, not only the table.
"""

from __future__ import annotations

import base64
from html import escape

WIDTH, HEIGHT = 720, 340
LEFT, RIGHT, TOP, BOTTOM = 56, 120, 36, 72
SERIES = (("L", "L", "rgb(17,24,39)", 3.0, ""), ("P", "P", "rgb(234,88,12)", 2.0, ""),
          ("D", "D", "rgb(37,99,235)", 2.0, "7 5"), ("Omega", "Ω", "rgb(22,163,74)", 2.0, ""))
"""(trajectory key, label, colour, stroke width, dash): D is dashed so it shows where it overlaps P."""


def trajectory_svg(rows: list[dict], title: str = "GGS loss trajectory") -> str:
    """An SVG line chart of the trajectory rows (``round``, ``L``, ``D``, ``P``, ``Omega``, ``state``)."""
    rows = [r for r in rows if isinstance(r.get("round"), int)]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = max([1.0] + [float(r.get(key, 0) or 0) for r in rows for key, *_ in SERIES])
    count = max(len(rows), 1)

    def x(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / count)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - max(0.0, float(value)) / top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
             f'<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>']
    for step in range(5):  # horizontal grid with values
        value = top * step / 4
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                     'stroke="#e5e7eb"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end" fill="#6b7280">'
                     f'{value:.2f}</text>')
    for i, row in enumerate(rows):  # one column per round: round number and directive
        parts.append(f'<text x="{x(i):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">round {row["round"]}'
                     '</text>')
        parts.append(f'<text x="{x(i):.1f}" y="{TOP + plot_h + 34}" text-anchor="middle" font-weight="bold" '
                     f'fill="#374151">{escape(str(row.get("state", "")))}</text>')
    for key, _label, colour, width, dash in SERIES:
        points = " ".join(f"{x(i):.1f},{y(row.get(key, 0) or 0):.1f}" for i, row in enumerate(rows))
        if len(rows) > 1:
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="{width}" '
                         f'stroke-dasharray="{dash or "none"}"/>')
        parts += [f'<circle cx="{x(i):.1f}" cy="{y(row.get(key, 0) or 0):.1f}" r="3.5" fill="{colour}"/>'
                  for i, row in enumerate(rows)]
    for n, (_, label, colour, _, dash) in enumerate(SERIES):  # legend
        ly = TOP + 10 + n * 20
        parts.append(f'<line x1="{LEFT + plot_w + 16}" x2="{LEFT + plot_w + 40}" y1="{ly}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="3" stroke-dasharray="{dash or "none"}"/>')
        parts.append(f'<text x="{LEFT + plot_w + 46}" y="{ly + 4}">{label}</text>')
    parts.append("</svg>")
    return "".join(parts)


def data_uri(svg: str) -> str:
    """The SVG as a base64 data URI an ``<img>`` (and a markdown image) can show."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def trajectory_markdown(task_id: str, rows: list[dict]) -> str:
    """The markdown artifact: the picture, then the numbers it was drawn from."""
    lines = [f"# Loss trajectory of `{task_id}`", "",
             f"![GGS loss trajectory: L, D, P and Ω by round]({data_uri(trajectory_svg(rows))})", "",
             "| round | directive | L | D | P | Ω | ∇L |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.get('round')} | {r.get('state')} | {r.get('L', 0):.3f} | {r.get('D', 0):.3f} | "
              f"{r.get('P', 0):.3f} | {r.get('Omega', 0):.3f} | {r.get('grad_l', 0):+.3f} |" for r in rows]
    return "\n".join(lines)
