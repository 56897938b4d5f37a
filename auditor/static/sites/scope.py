"""Where the site finder's walk is in a module: the binding frames (`names.Scopes`), the
qualname of the function being walked (as the runtime spells it), and, per class, the
attributes of `self` the class set to torch (`self.d = torch.distributed`)."""

from __future__ import annotations

import ast

from auditor.static.exports import Routes
from auditor.static.names import Scopes, dotted, qualname


class Scope:
    def __init__(self, module: str, is_package: bool, received: Routes) -> None:
        self.module = module
        self.names = Scopes(module, is_package, received.names, received.attributes)
        self.frame_names: list[str] = ["<module>"]  # parallel to names.frames
        self.qualname: list[tuple[str, str]] = []  # (kind, name)
        self.self_aliases: list[dict[str, str]] = []  # per class: `self.d = torch.distributed`

    def function_name(self) -> str:
        return qualname(self.qualname)

    def class_name(self) -> str:
        """The qualname of the innermost class around the walk, `<module>` outside any."""
        classes = [i for i, (kind, _) in enumerate(self.qualname) if kind == "class"]
        return qualname(self.qualname[: classes[-1] + 1]) if classes else "<module>"

    def enter(self, kind: str, name: str) -> None:
        """Into a class or a function (`kind`) of this name."""
        self.qualname.append((kind, name))
        self.names.push(kind)
        self.frame_names.append(self.function_name())

    def leave(self) -> None:
        self.qualname.pop()
        self.names.pop()
        self.frame_names.pop()

    def bind_definition(self, name: str) -> None:
        """A module-level def is `module.name` (torch's own `def send` is the API when the target
        is torch); a nested one only shadows."""
        self.names.bind(name, f"{self.module}.{name}" if len(self.names.frames) == 1 else None)

    def resolve(self, node: ast.AST) -> str | None:
        """`names.resolve`, and attributes of `self` its class set to torch."""
        qn = self.names.resolve(node)
        if qn is None and self.self_aliases and self.names.frame_of("self") is not None:
            text = dotted(node)
            if text is not None and text.startswith("self."):
                _, attr, *rest = text.split(".")
                alias = self.self_aliases[-1].get(attr)
                if alias is not None:
                    return ".".join([alias, *rest])
        return qn

    def var(self, name: str) -> tuple[str, str, str]:
        """The flows holder of a variable: the function whose frame binds it."""
        frame = self.names.frame_of(name)
        for i, f in enumerate(self.names.frames):
            if f is frame:
                return ("var", self.frame_names[i], name)
        return ("var", "<module>", name)
