"""``vllmdiag leg build|show RECIPE [LEG]``: the runtime stacks of a recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from vllmdiag import codec
from vllmdiag.cli.output import JsonOption, emit_json, human, plain, user_errors
from vllmdiag.model.stack import EnvRecord
from vllmdiag.plan import recipe_legs
from vllmdiag.services.config import load_recipe
from vllmdiag.services.envs import EnvCache, EnvEvent

leg_app = typer.Typer(
    help="Build or inspect a recipe's legs (isolated uv environments).", no_args_is_help=True
)


@leg_app.command("build")
def build(
    recipe: Path = typer.Argument(..., help="Recipe YAML."),
    leg: str | None = typer.Argument(None, help="A leg or arm name (default: all)."),
    as_json: bool = JsonOption,
) -> None:
    """Build (or verify and reuse) legs; record freeze and runtime stack."""
    console = human(as_json)
    with user_errors():
        rec = load_recipe(recipe)
        cache = EnvCache()
        out: list[dict[str, Any]] = []

        def show(e: EnvEvent) -> None:
            first = e.detail.splitlines()[0] if e.detail else ""
            console.print(plain(f"leg {e.leg}: {e.kind.value} {first}"), highlight=False)

        for spec in recipe_legs(rec, leg):
            record = cache.ensure(spec, observer=show).record()
            out.append(codec.dump(record))
            if not as_json:
                _stack_table(console, record)
        if as_json:
            emit_json({"recipe": rec.name, "legs": out})


@leg_app.command("show")
def show(
    recipe: Path = typer.Argument(..., help="Recipe YAML."),
    leg: str | None = typer.Argument(None, help="A leg or arm name (default: all)."),
    freeze: bool = typer.Option(False, "--freeze", help="Also list every installed package."),
    as_json: bool = JsonOption,
) -> None:
    """Show legs: spec, cache key, path, and what is installed if built (never builds)."""
    console = human(as_json)
    with user_errors():
        rec = load_recipe(recipe)
        cache = EnvCache()
        out = []
        for spec in recipe_legs(rec, leg):
            env = cache.lookup(spec)
            data: dict[str, Any] = {
                "leg": spec.name,
                "key": spec.key(),
                **spec.identity(),
                "path": str(cache.path_for(spec)),
                "built": env is not None,
            }
            if env is not None:
                data.update(codec.dump(env.record()))
            out.append(data)
            if not as_json:
                head = plain(spec.name, "bold")
                head.append(f" key {spec.key()} ")
                head.append("built" if env else "not built", style="" if env else "yellow")
                head.append(f" at {data['path']}")
                console.print(head, highlight=False)
                console.print(
                    plain(
                        f"  python {spec.python_request}, requirements: "
                        f"{' '.join(spec.requirements) or '—'}"
                        + (f", exclude_newer {spec.exclude_newer}" if spec.exclude_newer else "")
                    ),
                    highlight=False,
                )
                if env is not None:
                    _stack_table(console, env.record())
                    if freeze:
                        console.print(plain("\n".join(f"    {ln}" for ln in env.freeze)))
        if as_json:
            emit_json({"recipe": rec.name, "legs": out})


def _stack_table(console: Any, env: EnvRecord) -> None:
    st = env.stack
    table = Table(title=plain(f"{env.leg} ({env.lock_hash})"), title_justify="left")
    for col in (
        "vllm",
        "torch",
        "CUDA",
        "transformers",
        "flashinfer",
        "cutlass-dsl",
        "triton",
        "python",
        "GPU",
    ):
        table.add_column(col)
    gpus = env.gpu.gpus
    gpu = f"{len(gpus)}× {gpus[0].name} ({gpus[0].driver})" if gpus else "—"
    values = (
        st.vllm,
        st.torch,
        st.torch_cuda,
        st.transformers,
        st.flashinfer_python,
        st.nvidia_cutlass_dsl,
        st.triton,
        st.python,
    )
    table.add_row(*(plain(v or "—") for v in values), plain(gpu))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(leg_app, name="leg")
