"""A Hugging Face Hub and a plain file server on 127.0.0.1, for the weights tests: nothing is
downloaded from the network, and the registry's own code path (``huggingface_hub``'s metadata
call and download, ``keras.utils.get_file``) runs against it.

The Hub answers what ``huggingface_hub`` asks: ``HEAD``/``GET /<repo>/resolve/<rev>/<file>``
with the headers huggingface.co sends for a Git LFS file (``X-Repo-Commit``, ``X-Linked-Etag``
holding the file's SHA-256, ``X-Linked-Size``), where ``<rev>`` is a full commit id or
``main``; and ``GET /api/models/<repo>/commits/main``, the repository's commits, newest first.
Files can be served with other bytes than the Hub records (``tampered``) or under another
commit than asked for (``wrong_commit``), as a corrupt mirror or a lying proxy would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.server
import json
import threading
from collections.abc import Iterator

__all__ = ["LocalHub", "Repository", "serving"]


@dataclasses.dataclass
class Repository:
    """A Hub repository: its commits, oldest first, each ``(commit id, {filename: bytes})``
    holding the whole tree at that commit."""

    commits: list[tuple[str, dict[str, bytes]]]
    tampered: dict[str, bytes] = dataclasses.field(default_factory=dict)
    wrong_commit: str | None = None
    lfs: bool = True  # False: files kept in git itself, whose ETag is a git SHA-1, not a SHA-256

    def tree(self, revision: str) -> tuple[str, dict[str, bytes]] | None:
        if revision == "main":
            return self.commits[-1]
        return next((c for c in self.commits if c[0] == revision), None)


@dataclasses.dataclass
class LocalHub:
    """What the server serves: Hub repositories by id, plain files by path."""

    repositories: dict[str, Repository] = dataclasses.field(default_factory=dict)
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)
    requests: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    url: str = ""

    def add_file(self, repo: str, filename: str, data: bytes, commit: str) -> None:
        """A new commit of ``repo`` (created if needed) that adds or replaces ``filename``."""
        repository = self.repositories.setdefault(repo, Repository([]))
        tree = dict(repository.commits[-1][1]) if repository.commits else {}
        tree[filename] = data
        repository.commits.append((commit, tree))


def _handler(hub: LocalHub):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_HEAD(self):
            self._answer(body=False)

        def do_GET(self):
            self._answer(body=True)

        def _answer(self, body: bool):
            path = self.path.split("?")[0]
            hub.requests.append((self.command, path))
            if path in hub.files:
                return self._send(200, hub.files[path], {}, body)
            if path.startswith("/api/models/"):
                return self._commits(path, body)
            repo, _, rest = path.lstrip("/").partition("/resolve/")
            revision, _, filename = rest.partition("/")
            repository = hub.repositories.get(repo)
            found = repository.tree(revision) if repository else None
            if found is None or filename not in found[1]:
                return self._send(404, b"not found", {"X-Error-Code": "EntryNotFound"}, body)
            commit, tree = found
            recorded = tree[filename]
            data = repository.tampered.get(filename, recorded)
            headers = {"X-Repo-Commit": repository.wrong_commit or commit}
            if repository.lfs:
                sha256 = hashlib.sha256(recorded).hexdigest()
                headers["X-Linked-Etag"] = headers["ETag"] = f'"{sha256}"'
                headers["X-Linked-Size"] = str(len(recorded))
            else:
                headers["ETag"] = f'"{hashlib.sha1(recorded).hexdigest()}"'
            self._send(200, data, headers, body)

        def _commits(self, path: str, body: bool):
            repo = path.removeprefix("/api/models/").rpartition("/commits/")[0]
            repository = hub.repositories.get(repo)
            if repository is None:
                return self._send(404, b"not found", {}, body)
            listed = [
                {
                    "id": commit,
                    "title": f"commit {i}",
                    "message": "",
                    "date": "2023-04-05T00:00:00.000Z",
                    "authors": [{"user": "someone"}],
                }
                for i, (commit, _) in enumerate(repository.commits)
            ]
            data = json.dumps(listed[::-1]).encode()
            self._send(200, data, {"Content-Type": "application/json"}, body)

        def _send(self, status: int, data: bytes, headers: dict, body: bool):
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

    return Handler


@contextlib.contextmanager
def serving(hub: LocalHub) -> Iterator[LocalHub]:
    """Serve ``hub`` on a free port of 127.0.0.1 (its ``url``) while the block runs."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
