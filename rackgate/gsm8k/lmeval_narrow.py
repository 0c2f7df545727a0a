"""lm_eval's own command line, with its task index narrowed to --include_path.

lm_eval builds an index of every task YAML it ships (~14k files) on each start, before it looks
at --tasks. When the suite runs GSM8K from a local directory, the task it names is the one it
wrote into --include_path (rackgate.gsm8k.lmeval.local_task_yaml), which includes lm-eval's own
gsm8k.yaml by its absolute path: the shipped index is never used, so it is not built. Everything
else is lm_eval's CLI unchanged (same arguments, same outputs). Without --include_path this is
plain `python -m lm_eval`.

Run by path (python .../lmeval_narrow.py ARGS), so it needs nothing but lm_eval importable.
"""
import sys
from typing import Any


def main() -> None:
    from lm_eval.tasks import manager

    original = manager.TaskManager.__init__

    def narrowed(self: Any, *args: Any, include_path: str | None = None, include_defaults: bool = True,
                 **kwargs: Any) -> None:
        original(self, *args, include_path=include_path,
                 include_defaults=include_defaults and not include_path, **kwargs)

    manager.TaskManager.__init__ = narrowed
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *sys.argv[1:]]
    cli_evaluate()


if __name__ == "__main__":
    main()
