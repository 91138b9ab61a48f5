"""A command whose help also says what each positional argument is.

click shows the help of options only: `recuerdo remember --help` listed CATEGORY and CONTENT
without saying which categories there are. A verb's arguments are documented under its
docstring's Args: like its options; this prints them under "Arguments:".
"""

from __future__ import annotations

from typing import Any

import click


class DescribedCommand(click.Command):
    def __init__(self, *args: Any, described: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.described = described

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.described:
            with formatter.section("Arguments"):
                formatter.write_dl(self.described)
        super().format_options(ctx, formatter)
