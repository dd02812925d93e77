"""Kinetic on Ray Serve, for traffic one machine cannot carry: N replicas of Kinetic's server app, each holding
the model and its own Warm Start prompt states, behind one Ray Serve address. A request goes to the replica
that already served the longest start of its conversation (PrefixAffinityRouter), where its prompt state is;
a new conversation to the least busy one. Answers stream through as they are generated.

    python examples/ray_serve.py MODEL.gguf --replicas 2 --port 8000 [-c 4096] [-t 4] [-np 4]

Every route of `kinetic serve` works at http://127.0.0.1:8000 (OpenAI's under /v1), and each answer is the one
a single `kinetic serve` gives: greedy and seeded answers do not depend on the replica (docs/exactness.md).
docs/scale-out.md explains the set-up; it needs `pip install "ray[serve]"`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from ray import serve
from ray.serve.config import RequestRouterConfig
from ray.serve.handle import DeploymentHandle
from ray.serve.request_router import FIFOMixin, PendingRequest, ReplicaID, RequestRouter, RunningReplica
from starlette.requests import Request
from starlette.responses import StreamingResponse

MIN_SHARED = 64  # characters of conversation a replica must already have seen to be preferred
REMEMBERED = 256  # conversations remembered per replica


@dataclass(frozen=True)
class Forwarded:
    """An HTTP request as the ingress hands it to a replica; `conversation` is what the router matches on."""

    method: str
    path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    conversation: str


def conversation_of(body: bytes) -> str:
    """A request's conversation as text, in the order the prompt holds it: system, then messages or prompt."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return ""
    if not isinstance(request, dict):
        return ""
    parts = [request.get(key) for key in ("system", "instructions", "messages", "input", "prompt")]
    return json.dumps([part for part in parts if part is not None], ensure_ascii=False)


def shared_start(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


class PrefixAffinityRouter(FIFOMixin, RequestRouter):
    """Ray Serve routing on its public RequestRouter API: the replica that saw the longest start of the request's
    conversation (at least MIN_SHARED characters) first, the others after it; with no such replica, all of them
    alike, and Ray Serve picks the one with the shortest queue. A full replica is passed over either way."""

    def initialize_state(self, **kwargs) -> None:
        self.seen: dict[ReplicaID, deque[str]] = {}

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: Optional[PendingRequest] = None) -> list[list[RunningReplica]]:
        text = _conversation(pending_request)

        def longest(replica: RunningReplica) -> int:
            return max((shared_start(text, old) for old in self.seen.get(replica.replica_id, ())), default=0)

        best = max(candidate_replicas, key=longest, default=None)
        if best is None or longest(best) < MIN_SHARED:
            return [candidate_replicas]
        return [[best], [replica for replica in candidate_replicas if replica is not best]]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result) -> None:
        self.seen.setdefault(replica_id, deque(maxlen=REMEMBERED)).append(_conversation(pending_request))

    def on_replica_actor_died(self, replica_id: ReplicaID) -> None:
        super().on_replica_actor_died(replica_id)
        self.seen.pop(replica_id, None)


def _conversation(pending_request: Optional[PendingRequest]) -> str:
    forwarded = next((arg for arg in pending_request.args if isinstance(arg, Forwarded)), None) \
        if pending_request is not None else None
    return forwarded.conversation if forwarded is not None else ""


@serve.deployment
class KineticReplica:
    """Kinetic's WSGI app (kinetic.server.make_app) on one model, with its prompt states in a folder of its own."""

    def __init__(self, model: str, ctx_size: Optional[int], threads: Optional[int], parallel: Optional[int]):
        from kinetic.engine.options import SessionOptions
        from kinetic.server import make_app
        from kinetic.server.serving import load_served_model

        self.warm = tempfile.TemporaryDirectory(prefix="kinetic-warm-")
        options = SessionOptions(ctx_size=ctx_size, threads=threads, state_dir=Path(self.warm.name))
        self.app = make_app(load_served_model(Path(model), options, parallel=parallel))

    def __call__(self, request: Forwarded) -> Iterator:
        """The answer's status and headers first, then its body as the app writes it."""
        from falcon.testing import create_environ

        environ = create_environ(path=request.path, query_string=request.query, method=request.method,
                                 headers=list(request.headers), body=request.body)
        started = {}
        body = self.app(environ, lambda status, headers, exc_info=None: started.update(status=status, headers=headers))
        try:
            yield int(started["status"].split()[0]), started["headers"]
            yield from body
        finally:
            getattr(body, "close", lambda: None)()  # a client gone: its generation stops and frees its slot


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Ingress:
    """The HTTP side: reads a request whole, routes it to a replica and streams the replica's answer back."""

    def __init__(self, replicas: DeploymentHandle):
        self.replicas = replicas.options(stream=True)

    async def __call__(self, request: Request) -> StreamingResponse:
        body = await request.body()
        forwarded = Forwarded(request.method, request.url.path, request.url.query,
                              tuple(request.headers.items()), body, conversation_of(body))
        answer = self.replicas.remote(forwarded)
        status, headers = await answer.__anext__()
        return StreamingResponse(answer, status_code=status, headers=dict(headers))


def application(model: str, replicas: int = 2, ctx_size: Optional[int] = None, threads: Optional[int] = None,
                parallel: Optional[int] = None):
    """The bound Ray Serve application: one Ingress in front of `replicas` KineticReplicas."""
    router = RequestRouterConfig(request_router_class=PrefixAffinityRouter)
    kinetic = KineticReplica.options(num_replicas=replicas, max_ongoing_requests=parallel or 4,
                                     request_router_config=router,
                                     ray_actor_options={"num_cpus": threads or 1})
    return Ingress.bind(kinetic.bind(model, ctx_size, threads, parallel))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the .gguf or .ktc file every replica serves")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("-c", "--ctx-size", type=int, default=None)
    parser.add_argument("-t", "--threads", type=int, default=None, help="CPU threads per replica")
    parser.add_argument("-np", "--parallel", type=int, default=None, help="requests run at once per replica")
    args = parser.parse_args()
    import ray

    ray.init(include_dashboard=False, num_cpus=max(args.replicas * (args.threads or 1), 1))
    try:
        serve.start(http_options={"host": args.host, "port": args.port})
        serve.run(application(args.model, args.replicas, args.ctx_size, args.threads, args.parallel),
                  name="kinetic", route_prefix="/")
        print(f"Serving {Path(args.model).stem} on {args.replicas} replicas at http://{args.host}:{args.port}/v1",
              flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        serve.shutdown()
        ray.shutdown()

if __name__ == "__main__":
    main()
