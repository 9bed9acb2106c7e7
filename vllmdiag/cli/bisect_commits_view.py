"""How ``bisect --by commit`` shows itself: each step as it runs, then the table of
steps (commit, subject, verdict, value), the first bad and last good commits, the range
left when steps were skipped, and the lines that reproduce both sides. Commit subjects
and check output are data: always Rich ``Text``, never markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from vllmdiag.events import Note, Observer
from vllmdiag.jobs.bisect import BisectEvent, StepFinished, StepStarted, StepVerdict
from vllmdiag.jobs.bisect.commit_info import CommitInfo
from vllmdiag.jobs.bisect.commit_results import CommitBisectResult
from vllmdiag.jobs.bisect.events import CandidatesListed

_STYLE = {StepVerdict.GOOD: "green", StepVerdict.BAD: "red", StepVerdict.SKIP: "yellow"}


def commit_view(console: Console, pkg: str) -> Observer[BisectEvent]:
    def observe(event: BisectEvent) -> None:
        if isinstance(event, CandidatesListed):
            console.print(Text(f"  bisecting {event.package} over {len(event.candidates)} commits"))
        elif isinstance(event, StepStarted):
            console.print(Text(f"  {pkg} @ {event.version[:10]}: installing and checking", "dim"))
        elif isinstance(event, StepFinished):
            step = event.step
            how = "journal" if step.resumed else f"{step.elapsed_s:.1f}s"
            line = Text(f"  {step.version[:10]}: ")
            line.append(step.verdict.value, _STYLE[step.verdict])
            line.append(f" (rc {step.rc}, {how})")
            if step.value is not None or step.verdict is StepVerdict.SKIP:
                line.append(f" {step.detail.splitlines()[-1][:120] if step.detail else ''}")
            console.print(line)
        elif isinstance(event, Note):
            console.print(Text(f"  {event.text}", "yellow" if event.level == "warning" else "dim"))

    return observe


def describe(c: CommitInfo) -> Text:
    pr = f" (PR #{c.pr})" if c.pr is not None else ""
    return Text(f"{c.commit}  {c.date}{pr}\n    {c.subject}")


def render_commits(console: Console, result: CommitBisectResult) -> None:
    subjects = {c.commit: c.subject for c in result.commits}
    table = Table(title=Text(f"bisect {result.package} by commit ({result.main_ref})"))
    for col in ("commit", "subject", "verdict", "rc", "value", "time", "detail"):
        table.add_column(col)
    for s in result.steps:
        table.add_row(
            Text(s.version[:10]),
            Text(subjects.get(s.version, "")[:60]),
            Text(s.verdict.value, style=_STYLE[s.verdict]),
            " ".join(str(r) for r in s.rcs) or str(s.rc),
            Text(", ".join(f"{v:g}" for v in s.values)),
            "journal" if s.resumed else f"{s.elapsed_s:.1f}s",
            Text(s.detail.splitlines()[-1][:100] if s.detail else ""),
        )
    console.print(table)
    for note in result.notes:
        console.print(Text(note, "dim"))
    if result.metric is not None and result.threshold is not None:
        how = "derived from the two ends" if result.derived else "given"
        base = f"baseline {result.baseline:g}" if result.baseline is not None else "no baseline"
        console.print(Text(f"{result.metric}: {base}, threshold {result.threshold:g} ({how})"))
    console.print(Text("last good: ", "green") + describe(result.last_good))
    console.print(Text("first bad: ", "red") + describe(result.first_bad))
    if not result.exact:
        console.print(
            Text(
                f"not exact: {len(result.range_left)} commit(s) between them could not be "
                "checked (skipped); the change is one of:",
                "yellow",
            )
        )
        for c in result.range_left:
            console.print(Text(f"  {c.commit[:10]} {c.subject}"))
    for side, rep in zip(("last good", "first bad"), result.reproduce, strict=True):
        console.print(f"[bold]reproduce {escape(side)}[/] ({escape(rep.commit[:10])}):")
        for line in (*rep.install, rep.check):
            console.print(Text(f"  {line}"))
    console.print(
        Text(f"{len(result.steps)} steps, {result.elapsed_s:.1f}s, journal {result.journal}", "dim")
    )
