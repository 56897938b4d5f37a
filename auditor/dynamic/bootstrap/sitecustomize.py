"""Put first on PYTHONPATH by `p2paudit record`: every Python process of the run arms the recorder
(`auditor.dynamic.session`), then this module steps aside for the sitecustomize it shadows.

p2paudit is loaded from the tree this file lives in, so the training interpreter needs no p2paudit
installed. This directory is taken off sys.path again, so the program sees the path it would have
seen; child processes inherit PYTHONPATH and bootstrap themselves the same way.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _arm() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != here]
    try:
        if "auditor" not in sys.modules:
            root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
            spec = importlib.machinery.PathFinder.find_spec("auditor", [root])
            if spec is None or spec.loader is None:
                raise ImportError(f"no auditor package under {root}")
            package = importlib.util.module_from_spec(spec)
            sys.modules["auditor"] = package
            spec.loader.exec_module(package)
        from auditor.dynamic import session

        session.start_from_env()
    except Exception as exc:
        print(f"p2paudit record: not recording this process ({type(exc).__name__}: {exc})",
              file=sys.stderr, flush=True)


def _chain() -> None:
    """Import the next sitecustomize on sys.path, as site.py would have."""
    me = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me


_arm()
_chain()
