"""A web server on 127.0.0.1 for the download tests: it serves bytes from
memory, each path the way a test asks (whole, missing, cut, slow), and counts
the requests. Nothing here touches the internet."""

import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Optional

import torch

from spacy_elmo.bilm import BiLM, BiLMOptions
from spacy_elmo.published_models import ModelFile, PublishedModel

TINY = dict(
    char_embedding_dim=4, filters=[(1, 4), (2, 4), (3, 8)], n_highway=1, lstm_dim=16, projection_dim=8, n_layers=2
)
OPTIONS_PATH = "/elmo/tiny/elmo_tiny_options.json"
WEIGHTS_PATH = "/elmo/tiny/elmo_tiny_weights.hdf5"


@dataclass
class Route:
    """How a path is served: `body` with `status`, in `pieces` with a `pause`
    after each but the last; the first `cut_first` requests get half the body
    under the whole body's Content-Length, then the connection closes."""

    body: bytes
    status: int = 200
    pieces: int = 1
    pause: float = 0.0
    cut_first: int = 0


class ModelServer:
    """``with ModelServer() as server``: serves `server.routes` at `server.url(path)`."""

    def __init__(self) -> None:
        self.routes: Dict[str, Route] = {}
        self.requests: Counter = Counter()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True  # a stalled answer does not hold up the end of a test
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def url(self, path: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{path}"

    def count(self, path: str) -> int:
        """How many times `path` was asked for (a request counts once the answer starts)."""
        with self._lock:
            return self.requests[path]

    def __enter__(self) -> "ModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(server: ModelServer) -> type:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with server._lock:
                server.requests[self.path] += 1
                seen = server.requests[self.path]
            route = server.routes.get(self.path, Route(b"", status=404))
            self.send_response(route.status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            body = route.body[: len(route.body) // 2] if seen <= route.cut_first else route.body
            step = max(1, -(-len(body) // route.pieces))
            try:
                for start in range(0, len(body), step):
                    if start:
                        time.sleep(route.pause)
                    self.wfile.write(body[start : start + step])
                    self.wfile.flush()
            except OSError:  # the client gave up (its timeout)
                pass

        def log_message(self, format: str, *args) -> None:
            pass

    return Handler


def tiny_model(directory) -> BiLM:
    """A tiny random biLM, saved in `directory` as options.json and weights.hdf5."""
    torch.manual_seed(0)
    model = BiLM(BiLMOptions(**TINY)).eval()
    model.save_allennlp(directory)
    return model


def tiny_entry(
    server: ModelServer, name: str = "tiny", *, weights_size: Optional[int] = None, weights_sha256: Optional[str] = None
) -> PublishedModel:
    """A catalogue entry for the tiny biLM that `server` serves."""
    return PublishedModel(
        name=name,
        options=ModelFile(server.url(OPTIONS_PATH)),
        weights=ModelFile(server.url(WEIGHTS_PATH), size=weights_size, sha256=weights_sha256),
        parameters=BiLMOptions(**TINY).n_parameters,
        language="en",
        licence="Apache-2.0",
        source=server.url("/"),
        trained_on="nothing",
    )


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
