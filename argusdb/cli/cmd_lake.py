"""``argus lake compact|expire STORE``: a shared store's upkeep (DuckLake's own maintenance)."""

from __future__ import annotations

import time

import click

from argusdb.api.surface import compact, expire
from argusdb.cli.output import handle_errors, output_options, print_json


@click.group("lake")
def command() -> None:
    """Upkeep of a shared store (ducklake: URI): merge small data files, expire old snapshots.

    Every ingest adds its own Parquet files and a DuckLake snapshot. 'compact' merges small
    adjacent files (questions open fewer files); 'expire' forgets snapshots older than a time
    and deletes the files only they read. Both wait for the writers' lock like an ingest.
    """


@command.command("compact")
@click.argument("store")
@output_options(csv=False)
@handle_errors
def compact_command(store: str, as_json: bool) -> None:
    """Merge STORE's small adjacent data files (ducklake_merge_adjacent_files).

    Keeps every row and every snapshot: older snapshots still read the files they read
    (until 'argus lake expire' removes snapshots older than a time, and with them the
    files only they need).
    """
    out = compact(store)
    if as_json:
        print_json(out)
    else:
        click.echo(f"{store}: {out['files_before']} data files -> {out['files_after']}")


@command.command("expire")
@click.argument("store")
@click.option("--older-than", default=None, metavar="TIME",
              help="Expire snapshots committed before TIME (ISO, UTC); default: 7 days ago.")
@output_options(csv=False)
@handle_errors
def expire_command(store: str, older_than: str | None, as_json: bool) -> None:
    """Expire STORE's snapshots older than --older-than and delete the data files only they
    read (ducklake_expire_snapshots, ducklake_cleanup_old_files).

    Keeps every row the store holds now, the newest snapshot always, and every snapshot at
    or after TIME ('argus query --as-of' of an expired one is refused). Files a failed or
    killed ingest left behind are deleted too.
    """
    at = older_than or time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 7 * 86400))
    out = expire(store, at)
    if as_json:
        print_json(out)
    else:
        click.echo(f"{store}: expired {out['snapshots_expired']} snapshots before {at}, "
                   f"deleted {out['files_deleted']} files; {out['snapshots_kept']} snapshots "
                   "kept")
