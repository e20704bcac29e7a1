"""README.md's code blocks, read from the file itself (so a test of them
cannot drift from what a reader copies): fenced blocks with their
language, and indented blocks (shell commands, language "sh").

A block the test cannot run here is marked in README.md by an HTML
comment (hidden when the page is rendered) on the last non-blank line
before it:

    <!-- readme-test skip: systemd is not PID 1 here -->

The reason is what the test reports for that block."""
import dataclasses
import json
import re

MARKER = re.compile(r"^<!--\s*readme-test\s+skip:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
SHELL, PYTHON, JSON = ("sh", "bash", "shell"), ("python", "py"), ("json",)


@dataclasses.dataclass
class Block:
    line: int          # the first line of the block's text (1-based)
    lang: str          # "sh" for an indented block
    text: str
    skip: str = None   # the marker's reason

    @property
    def where(self):
        return f"README.md:{self.line}"

    def use(self):
        """How the test runs it: "sh", "python", "mcp" (an mcpServers
        config, used by an MCP client), or None (no known use)."""
        if self.lang in SHELL:
            return "sh"
        if self.lang in PYTHON:
            return "python"
        if self.lang in JSON:
            try:
                value = json.loads(self.text)
            except ValueError:
                return None
            if isinstance(value, dict) and set(value) == {"mcpServers"}:
                return "mcp"
        return None


def blocks(text):
    """Every code block of a Markdown text, in order."""
    lines = text.split("\n")
    found, i = [], 0

    def marker_before(start):
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        m = MARKER.match(lines[j].strip()) if j >= 0 else None
        return m.group(1) if m else None

    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            fence, lang, start = m.group(1), m.group(2).lower(), i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith(fence[0] * len(fence)):
                body.append(lines[i])
                i += 1
            found.append(Block(start + 2, lang, "\n".join(body) + "\n", marker_before(start)))
            i += 1
            continue
        if lines[i].startswith("    ") and lines[i].strip() and (i == 0 or not lines[i - 1].strip()):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            found.append(Block(start + 1, "sh", "\n".join(body) + "\n", marker_before(start)))
            continue
        i += 1
    return found
