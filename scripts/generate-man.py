#!/usr/bin/env python3
"""Writes the man pages of a swift-argument-parser tool from its own command definitions.

Usage: scripts/generate-man.py BINARY OUTDIR VERSION DATE [--extra FILE]

Runs `BINARY --experimental-dump-help` (ArgumentParser's description of every command, option,
default and help text: the same definitions `--help` prints) and writes, into OUTDIR:
  gbgbridge.1            the tool: synopsis, description, every command with its abstract, and
                         the sections of --extra FILE (FILES, SECURITY, SEE ALSO: what no option
                         definition says) appended as they are;
  gbgbridge-read.1 …     one page per command and subcommand (gbgbridge-trust-import.1), with
                         its usage, discussion and every option, so `man gbgbridge-read` says
                         what `gbgbridge read --help` says.
Nothing is written by hand here that the command definitions already say, so the pages cannot
drift from the commands.
"""
import json
import re
import subprocess
import sys
from pathlib import Path


def escape(text: str) -> str:
    """Text for roff: backslashes doubled, hyphens as \\-, no line starting with a control character;
    words longer than 30 characters (URIs, paths) are never hyphenated (\\%) and may break after
    / ; ? & = (\\: is a break point that prints nothing), so they fit the width without a hyphen
    that is not theirs."""
    text = re.sub(r"\S{31,}", lambda word: "\1" + re.sub(r"([/;?&=])(?=\S)", lambda mark: mark.group(1) + "\0", word.group(0)), text)
    text = text.replace("\\", "\\e").replace("-", "\\-").replace("\0", "\\:").replace("\1", "\\%")
    lines = []
    for line in text.split("\n"):
        if line.startswith(".") or line.startswith("'"):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def paragraphs(text: str) -> str:
    """A discussion's paragraphs (blank lines between them) as .PP blocks; indented lines kept as they are."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        if not block.strip():
            continue
        if any(line.startswith("  ") for line in block.split("\n")):
            out.append(".PP\n.nf\n" + escape(block) + "\n.fi")
        else:
            out.append(".PP\n" + escape(" ".join(line.strip() for line in block.split("\n"))))
    return "\n".join(out)


def flag_names(argument) -> list:
    names = []
    for name in argument.get("names", []):
        prefix = "-" if name["kind"] == "short" else "--"
        if name["kind"] == "longWithSingleDash":
            prefix = "-"
        names.append(prefix + name["name"])
    return names


def option_entry(argument) -> str:
    kind = argument["kind"]
    value = argument.get("valueName") or "value"
    if kind == "positional":
        head = "\\fI" + escape(value) + "\\fR" + ("..." if argument.get("isRepeating") else "")
    else:
        names = ", ".join("\\fB" + escape(n) + "\\fR" for n in flag_names(argument))
        head = names + (" \\fI" + escape(value) + "\\fR" if kind == "option" else "")
    text = argument.get("abstract", "") or ""
    if argument.get("discussion"):
        text += "\n\n" + argument["discussion"] if isinstance(argument["discussion"], str) else ""
    default = argument.get("defaultValue")
    if default not in (None, "", "false") and kind != "flag":
        text += " (default: %s)" % default
    if argument.get("isRepeating") and kind == "option":
        text += " May be given more than once."
    return ".TP\n" + head + "\n" + escape(text.strip())


def synopsis(path: list, command) -> str:
    parts = [".B " + escape(" ".join(path))]
    for argument in command.get("arguments", []):
        if not argument.get("shouldDisplay", True) or {"--help", "--version"} & set(flag_names(argument)):
            continue
        value = argument.get("valueName") or "value"
        if argument["kind"] == "positional":
            item = "\\fI" + escape(value) + "\\fR" + ("..." if argument.get("isRepeating") else "")
        else:
            name = flag_names(argument)[0] if flag_names(argument) else ""
            item = "\\fB" + escape(name) + "\\fR" + (" \\fI" + escape(value) + "\\fR" if argument["kind"] == "option" else "")
            if argument.get("isRepeating"):
                item += "..."
        parts.append("[" + item + "]" if argument.get("isOptional", False) else item)
    return parts[0] + "\n" + " ".join(parts[1:]) if len(parts) > 1 else parts[0]


def page_name(path: list) -> str:
    return "-".join(path)


def header(name: str, version: str, date: str) -> str:
    # Left-aligned, not justified: a line that holds a URI has no spaces to stretch ("cannot
    # adjust line", lintian's groff-message).
    return '.TH %s 1 "%s" "gbgbridge %s" "User Commands"\n.ad l\n' % (escape(name.upper()), date, escape(version))


def command_page(path: list, command, version: str, date: str, extra: str = "") -> str:
    name = page_name(path)
    out = [header(name, version, date)]
    out.append(".SH NAME\n%s \\- %s" % (escape(name), escape((command.get("abstract") or "").rstrip("."))))
    out.append(".SH SYNOPSIS\n" + synopsis(path, command))
    subcommands = [s for s in command.get("subcommands", []) if s.get("shouldDisplay", True) and s["commandName"] != "help"]
    description = [escape(command.get("abstract") or "")]
    if command.get("discussion"):
        description.append(paragraphs(command["discussion"]))
    out.append(".SH DESCRIPTION\n" + "\n".join(description))
    if subcommands:
        out.append(".SH COMMANDS\n" + "\n".join(
            ".TP\n\\fB%s\\fR\n%s\nSee \\fB%s\\fR(1)." % (escape(s["commandName"]), escape(s.get("abstract") or ""), escape(page_name(path + [s["commandName"]])))
            for s in subcommands))
    options = [a for a in command.get("arguments", []) if a.get("shouldDisplay", True)]
    if options:
        out.append(".SH OPTIONS\n" + "\n".join(option_entry(a) for a in options))
    # The sections no option definition says (the tool's page: FILES, SECURITY), and their SEE ALSO.
    more_see = ""
    if extra:
        body, _, more_see = extra.partition(".SH SEE ALSO")
        out.append(body.strip("\n"))
    see = ["\\fB%s\\fR(1)" % escape(page_name(path[:-1]))] if len(path) > 1 else []
    see += ["\\fB%s\\fR(1)" % escape(page_name(path + [s["commandName"]])) for s in subcommands]
    if see or more_see.strip():
        out.append(".SH SEE ALSO\n" + ",\n".join(see) + (",\n" + more_see.strip("\n") if more_see.strip() else ""))
    return "\n".join(out) + "\n"


def main() -> int:
    args = sys.argv[1:]
    extra = None
    if "--extra" in args:
        index = args.index("--extra")
        extra = Path(args[index + 1]).read_text()
        del args[index:index + 2]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, outdir, version, date = args
    dump = subprocess.run([binary, "--experimental-dump-help"], check=True, capture_output=True, text=True).stdout
    tool = json.loads(dump)
    if tool.get("serializationVersion") != 0:
        print("generate-man: unknown dump-help version %r" % tool.get("serializationVersion"), file=sys.stderr)
        return 1
    root = tool["command"]
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def walk(path, command):
        text = command_page(path, command, version, date, extra if len(path) == 1 and extra else "")
        target = out / (page_name(path) + ".1")
        target.write_text(text)
        written.append(target.name)
        for sub in command.get("subcommands", []):
            if sub.get("shouldDisplay", True) and sub["commandName"] != "help":
                walk(path + [sub["commandName"]], sub)

    walk([root["commandName"]], root)
    print("generate-man: " + " ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
