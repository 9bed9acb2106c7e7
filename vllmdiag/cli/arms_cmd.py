"""``vllmdiag arms list|show``: the arm library."""

from __future__ import annotations

import difflib

import typer
from rich.table import Table

from vllmdiag.cli.output import JsonOption, emit_json, human, lit, plain, user_errors
from vllmdiag.cli.tables import print_table
from vllmdiag.errors import VllmdiagError
from vllmdiag.model.arms import Arm
from vllmdiag.services.config import load_arm_library

arms_app = typer.Typer(help="The library of single-variable arms.", no_args_is_help=True)


def _json(arm: Arm, where: str = "") -> dict[str, object]:
    return {
        "name": arm.name,
        "family": arm.family,
        "kind": arm.kind.value,
        "change": arm.describe(),
        "single_variable": arm.single_variable,
        "honoured_by": arm.honoured_by,
        "fingerprint_field": arm.fingerprint_field,
        "hypothesis": arm.hypothesis,
        "source": where,
    }


@arms_app.command("list")
def list_arms(
    family: str | None = typer.Option(
        None, "--family", metavar="FAMILY", help="Only this family (e.g. attention, moe, pins)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """List the arms: name, kind, what each changes."""
    with user_errors():
        lib = load_arm_library()
        families = sorted({a.family for a in lib})
        if family is not None and family not in families:
            close = difflib.get_close_matches(family, families, n=1)
            raise VllmdiagError(
                f"no arm family {family!r}",
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"families: {', '.join(families)}",
            )
        arms = [a for a in lib if family is None or a.family == family]
        if as_json:
            emit_json({"arms": [_json(a, lib.sources[a.name]) for a in arms]})
            return
        table = Table(title="arms", title_justify="left")
        table.add_column("name", no_wrap=True)
        for col in ("family", "kind"):
            table.add_column(col, no_wrap=True)
        table.add_column("change")  # prose: wraps at spaces
        table.add_column("honoured by", no_wrap=True)
        for a in arms:
            table.add_row(
                *(
                    plain(v or "")
                    for v in (a.name, a.family, a.kind.value, a.describe(), a.honoured_by)
                )
            )
        print_table(human(as_json), table)


@arms_app.command("show")
def show_arm(name: str = typer.Argument(..., help="Arm name."), as_json: bool = JsonOption) -> None:
    """Show one arm with the hypothesis it falsifies."""
    with user_errors():
        lib = load_arm_library()
        arm = lib.get(name)
        data = _json(arm, lib.sources[arm.name])
        if as_json:
            emit_json(data)
            return
        console = human(as_json)
        console.print(f"[bold]{lit(arm.name)}[/] ({lit(arm.family)}, {arm.kind.value})")
        lines = [f"  changes:     {arm.describe()}"]
        if arm.honoured_by:
            lines.append(f"  honoured by: {arm.honoured_by}")
        if arm.fingerprint_field:
            lines.append(f"  takes effect if the run's {arm.fingerprint_field} changes")
        lines += [f"  hypothesis:  {arm.hypothesis}", f"  defined at:  {data['source']}"]
        for line in lines:
            console.print(plain(line), highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(arms_app, name="arms")
