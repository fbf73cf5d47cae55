"""``python -m lfw``: the course exercise's ``lfw_dataset.py`` with its bugs fixed (docs/cli.md).

Loads LFW with a DataLoader and prints its first batch, saves a batch as a grid (``-visualize_batch``) or times
passes through the shared measurement primitive, as the benchmarks do (``-get_timing``). Takes the course's
single-dash flags and double-dash aliases.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from lfw.cli.args import OneLineParser
from lfw.data.dataset import LFWDataset
from lfw.data.index import INDEX_KINDS
from lfw.data.root import resolve_root
from lfw.data.screen import screen_tree
from lfw.data.transforms import PRESETS
from lfw.data.visualize import check_output, save_batch_grid
from lfw.errors import cli_entry, name_skip_option
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.printout import check_path, report_timing

MIB = 1024 * 1024
SKIP_FLAG = "-skip_bad_images"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m lfw", description="Load LFW with a PyTorch DataLoader; time or show it.",
                           allow_abbrev=False)
    parser.add_argument("-path_to_folder", "--path_to_folder", "--path-to-folder", default="",
                        help="LFW image folder or its parent (default: $LFW_ROOT, else synthetic LFW)")
    parser.add_argument("-batch_size", "--batch_size", "--batch-size", type=int, default=512)
    parser.add_argument("-num_workers", "--num_workers", "--num-workers", type=int, default=0,
                        help="worker processes; 0 loads in the main process (default)")
    parser.add_argument("-visualize_batch", "--visualize_batch", "--visualize-batch", action="store_true",
                        help="save one batch as a PNG grid titled with names (and show it if a display exists)")
    parser.add_argument("-get_timing", "--get_timing", "--get-timing", action="store_true",
                        help="time passes over -batches_to_check batches (-repetitions of them, after a warm-up)")
    parser.add_argument("-batches_to_check", "--batches_to_check", "--batches-to-check", type=int, default=100)
    parser.add_argument("-transform", "--transform", choices=sorted(PRESETS), default="none",
                        help="transform preset (default: none = decode + ToTensor)")
    parser.add_argument("-index", "--index", choices=INDEX_KINDS, default="numpy",
                        help="file index kind: numpy (one refcount) or list (one str per file)")
    parser.add_argument("-repetitions", "--repetitions", type=int, default=5, help="timing repetitions (default 5)")
    parser.add_argument("-threads", "--threads", type=int, default=1,
                        help="torch intra-op threads in this process (default 1, as the benchmarks pin it)")
    parser.add_argument("-out", "--out", default="lfw_batch.png", help="where -visualize_batch saves its PNG")
    parser.add_argument(SKIP_FLAG, "--skip_bad_images", "--skip-bad-images", action="store_true",
                        help="leave unreadable images (truncated, empty, not JPEG) out: all are checked first, and "
                             "how many were skipped, and which, is printed")
    parser.add_argument("-mprof", "--mprof", type=Path, default=None, metavar="FILE",
                        help="with -get_timing: memory-profiler samples the process tree's PSS through the passes "
                             "and writes its timeline to FILE (mprof plot FILE draws it)")
    return parser


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    previous = name_skip_option(SKIP_FLAG)  # a corrupt image's error names this flag
    try:
        return run(args)
    finally:
        name_skip_option(previous)


def run(args: argparse.Namespace) -> int:
    config = LoaderConfig(batch_size=args.batch_size, num_workers=args.num_workers)  # checks values first
    for flag, count in (("-repetitions", args.repetitions), ("-batches_to_check", args.batches_to_check)):
        if count <= 0:
            build_parser().error(f"{flag} must be a positive integer, got {count}")
    if args.threads < 1:
        build_parser().error(f"-threads must be 1 or more, got {args.threads}")
    if args.visualize_batch:
        check_output(args.out)  # before loading anything: a bad file name fails at once
    if args.mprof is not None:
        if not args.get_timing:
            build_parser().error("-mprof records the timing passes: use it with -get_timing")
        check_path(args.mprof)
    torch.set_num_threads(args.threads)
    source = resolve_root(args.path_to_folder or None)
    root = source.path
    if args.skip_bad_images:
        root, screening = screen_tree(root)
        print(screening.summary())
    dataset = LFWDataset(root, transform=args.transform, index=args.index)
    loader = config.build(dataset)
    print(f"LFW ({source.kind}) at {dataset.root}: {len(dataset)} images of {len(dataset.classes)} people, "
          f"{len(loader)} batches of {args.batch_size}, {args.num_workers} workers, "
          f"{torch.get_num_threads()} intra-op thread{'s' if torch.get_num_threads() != 1 else ''}"
          + (f"; {dataset.skipped_files} non-image files skipped" if dataset.skipped_files else ""))

    if args.visualize_batch:
        print(f"Saved one batch to {save_batch_grid(loader, dataset, args.out)}")

    if args.get_timing:
        if args.batches_to_check > len(loader):
            print(f"Note: the dataset has only {len(loader)} batches of {args.batch_size}; "
                  f"timing {len(loader)} instead of {args.batches_to_check}")
        report_timing(LoaderPass(loader, args.batches_to_check), args.repetitions, args.mprof)

    if not (args.visualize_batch or args.get_timing):
        images, labels = next(iter(loader))
        size_mib = images.element_size() * images.nelement() / MIB
        print(f"First batch: images {tuple(images.shape)} {images.dtype} ({size_mib:.1f} MiB), "
              f"labels {tuple(labels.shape)}; use -get_timing or -visualize_batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
