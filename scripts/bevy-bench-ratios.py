#!/usr/bin/env python3
"""The ratios of savegame-bevy's last bench run, as the README's table gives them.

Reads criterion's median estimates of the last `cargo bench -p savegame-bevy --bench world`
(target/criterion/{save,load,incremental}_<n>/*/new/estimates.json) and prints, for 10,000
and 100,000 entities: a save's frame against the hand-written save, a save until on disk
against the same protection by hand, the load against the hand-written one, and the 1% delta
until on disk against a full save (with the delta's frame). Run the bench first:

    cargo bench -p savegame-bevy --bench world -- --warm-up-time 1 --measurement-time 3
    python3 scripts/bevy-bench-ratios.py
"""

import json
import pathlib
import sys

CRITERION = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


def median_ms(group: str, bench: str) -> float:
    """The median estimate of one benchmark, in milliseconds."""
    path = CRITERION / group / bench / "new" / "estimates.json"
    return json.loads(path.read_text())["median"]["point_estimate"] / 1e6


def main() -> int:
    for n in ("10000", "100000"):
        try:
            frame = median_ms(f"save_{n}", "frame")
            hand = median_ms(f"save_{n}", "hand-written")
            on_disk = median_ms(f"save_{n}", "until-on-disk")
            protected = median_ms(f"save_{n}", "hand-protected")
            load = median_ms(f"load_{n}", "savegame-bevy")
            hand_load = median_ms(f"load_{n}", "hand-written")
            full = median_ms(f"incremental_{n}", "full save, until on disk")
            delta = median_ms(f"incremental_{n}", "1% changed, until on disk")
            delta_frame = median_ms(f"incremental_{n}", "1% changed, frame")
        except FileNotFoundError as missing:
            print(f"no estimate at {missing.filename}: run the bench first", file=sys.stderr)
            return 1
        print(
            f"{n}: frame {frame:.3f} ms / hand-written {hand:.3f} ms = {frame / hand:.3f}x"
            f" | until on disk / hand-protected {on_disk / protected:.3f}x"
            f" | load / hand-written {load / hand_load:.3f}x"
            f" | delta {delta:.3f} / full {full:.2f} ms = {100 * delta / full:.2f}%"
            f" (its frame {delta_frame:.3f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
