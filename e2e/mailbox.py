"""Reads the messages that scripts/mail-catcher stored in a directory (DIR/index.jsonl and DIR/NNNNNN.eml).

    box = Mailbox(directory)
    last = box.last_seq()
    ...  # make the server send a mail
    message = box.wait_for(to="someone@example.com", after_seq=last)
    code, link = box.code(message), box.link(message)

The catcher replaces both files atomically and writes a message before its index line, so whatever index line is
read names a complete message.
"""

import email
import email.policy
import json
import os
import re
import time
from dataclasses import dataclass, field

CODE_AFTER_WORD = re.compile(r"code\D{0,40}?(?<!\d)(\d{6,10})(?!\d)", re.IGNORECASE)
FIRST_URL = re.compile(r"https?://[^\s<>\"']+")


@dataclass
class Message:
    """One stored message, parsed: the envelope from the index, the decoded subject and bodies, the headers."""

    seq: int
    mail_from: str
    rcpt_tos: list
    subject: str
    text: str
    html: str | None
    headers: email.message.EmailMessage = field(repr=False)
    raw: bytes = field(repr=False)
    entry: dict = field(repr=False)


class Mailbox:
    def __init__(self, directory):
        self.directory = str(directory)

    def entries(self):
        """The index lines, oldest first (an empty list before the first message)."""
        try:
            with open(os.path.join(self.directory, "index.jsonl"), "rb") as file:
                data = file.read()
        except FileNotFoundError:
            return []
        # Only whole lines: the catcher appends each line in one write, a reader may catch one half written.
        return [json.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]

    def last_seq(self):
        """The number of the newest message, 0 when there is none: pass it as after_seq to wait for the next one."""
        entries = self.entries()
        return entries[-1]["seq"] if entries else 0

    def messages(self):
        """Every stored message, parsed, oldest first."""
        return [self._load(entry) for entry in self.entries()]

    def wait_for(self, to, timeout=10, after_seq=0):
        """The first message to `to` (case-insensitive) numbered above after_seq; AssertionError after timeout s."""
        wanted = to.lower()
        deadline = time.monotonic() + timeout
        while True:
            for entry in self.entries():
                if entry["seq"] > after_seq and wanted in (address.lower() for address in entry["rcpt_tos"]):
                    return self._load(entry)
            if time.monotonic() >= deadline:
                raise AssertionError(f"no mail to {to} after #{after_seq} within {timeout} s in {self.directory}")
            time.sleep(0.05)

    @staticmethod
    def code(message):
        """The digits (6 to 10) after the word "code" in the text body, or None."""
        match = CODE_AFTER_WORD.search(message.text)
        return match.group(1) if match else None

    @staticmethod
    def link(message):
        """The first http(s) URL in the text body, or None."""
        match = FIRST_URL.search(message.text)
        return match.group(0) if match else None

    def _load(self, entry):
        with open(os.path.join(self.directory, f"{entry['seq']:06d}.eml"), "rb") as file:
            raw = file.read()
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        text_part = parsed.get_body(preferencelist=("plain",))
        html_part = parsed.get_body(preferencelist=("html",))
        return Message(
            seq=entry["seq"],
            mail_from=entry["mail_from"],
            rcpt_tos=entry["rcpt_tos"],
            subject=str(parsed.get("subject", "")),
            text=text_part.get_content() if text_part is not None else "",
            html=html_part.get_content() if html_part is not None else None,
            headers=parsed,
            raw=raw,
            entry=entry,
        )
