"""Pure, frozen data: arms, recipes, cells, outcomes and verdicts. No I/O here."""
