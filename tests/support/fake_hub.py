"""A small Hugging Face Hub stand-in for tests: the API and file routes `huggingface_hub` downloads with.

Serves generated repos from memory on 127.0.0.1: `GET /api/models/{repo}/revision/{rev}` (the file list,
with sizes, git blob ids and LFS sha256 when `blobs=true`), and `HEAD`/`GET /{repo}/resolve/{rev}/{file}`
with `X-Repo-Commit`, `ETag` and `Range` support, so partial files resume. Knobs let tests require a token,
corrupt a file's bytes (checksum failure) or cut a response short once (resume).
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

LFS_THRESHOLD = 1024  # files larger than this are served as LFS files (sha256 etag), like the hub's big files


@dataclass
class Repo:
    files: dict[str, bytes]
    commit: str = ""
    token: str | None = None
    corrupt: set[str] = field(default_factory=set)
    cut_once: dict[str, int] = field(default_factory=dict)
    """file -> bytes after which the next GET of it stops (to exercise resume)."""

    def __post_init__(self) -> None:
        if not self.commit:
            digest = hashlib.sha1(json.dumps(sorted((k, len(v)) for k, v in self.files.items())).encode())
            self.commit = digest.hexdigest()


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


def safetensors_bytes(tensors: dict[str, list[int]], dtype: str = "F16") -> bytes:
    """A valid safetensors file with zero-filled tensors of these shapes."""
    width = {"F16": 2, "BF16": 2, "F32": 4}[dtype]
    header: dict[str, Any] = {}
    offset = 0
    for name, shape in tensors.items():
        size = width
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def tiny_llama_files(hidden: int = 16, layers: int = 2, vocab: int = 64) -> dict[str, bytes]:
    """config.json and model.safetensors of a tiny Llama-shaped model."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": hidden * 2, "num_attention_heads": 2, "num_key_value_heads": 2,
              "num_hidden_layers": layers, "vocab_size": vocab, "max_position_embeddings": 2048,
              "torch_dtype": "float16", "transformers_version": "4.45.0", "tie_word_embeddings": False}
    tensors = {"model.embed_tokens.weight": [vocab, hidden], "lm_head.weight": [vocab, hidden]}
    for i in range(layers):
        tensors[f"model.layers.{i}.mlp.up_proj.weight"] = [hidden * 2, hidden]
    return {"config.json": json.dumps(config, indent=2).encode(),
            "model.safetensors": safetensors_bytes(tensors),
            "tokenizer_config.json": b'{"model_max_length": 2048}'}


class FakeHub:
    """`async with FakeHub({"org/model": Repo(...)}) as hub:` then point HF_ENDPOINT at `hub.url`."""

    def __init__(self, repos: dict[str, Repo]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str, str | None]] = []
        """(method, path, Range header) of every request, for assertions."""
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakeHub:
        app = web.Application()
        app.router.add_get("/api/models/{org}/{name}/revision/{rev}", self._info)
        app.router.add_route("*", "/{org}/{name}/resolve/{rev}/{path:.*}", self._resolve)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _repo(self, request: web.Request) -> Repo:
        repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
        self.requests.append((request.method, request.path, request.headers.get("Range")))
        repo = self.repos.get(repo_id)
        if repo is None:
            raise web.HTTPNotFound(headers={"X-Error-Code": "RepoNotFound"}, text="Repository not found")
        if repo.token and request.headers.get("Authorization") != f"Bearer {repo.token}":
            raise web.HTTPUnauthorized(headers={"X-Error-Code": "GatedRepo"}, text="Access to this repo is gated")
        return repo

    async def _info(self, request: web.Request) -> web.Response:
        repo = self._repo(request)
        siblings = []
        for name, data in sorted(repo.files.items()):
            sibling: dict[str, Any] = {"rfilename": name, "size": len(data), "blobId": git_blob_id(data)}
            if len(data) > LFS_THRESHOLD:
                sibling["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
            siblings.append(sibling)
        return web.json_response({"id": f"{request.match_info['org']}/{request.match_info['name']}",
                                  "sha": repo.commit, "siblings": siblings})

    async def _resolve(self, request: web.Request) -> web.StreamResponse:
        repo = self._repo(request)
        name = request.match_info["path"]
        data = repo.files.get(name)
        if data is None:
            raise web.HTTPNotFound(headers={"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.commit})
        etag = hashlib.sha256(data).hexdigest() if len(data) > LFS_THRESHOLD else git_blob_id(data)
        served = bytes(b ^ 0xFF for b in data) if name in repo.corrupt else data
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        start = _range_start(request.headers.get("Range"))
        body = served[start:]
        if request.method == "HEAD":
            return web.Response(headers={**headers, "Content-Length": str(len(data))})
        status = 206 if start else 200
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        cut = repo.cut_once.pop(name, None)
        response = web.StreamResponse(status=status, headers={**headers, "Content-Length": str(len(body))})
        await response.prepare(request)
        if cut is not None:
            await response.write(body[:cut])
            request.transport.close()  # type: ignore[union-attr]  # drop the connection mid-file
            return response
        await response.write(body)
        await response.write_eof()
        return response


def _range_start(header: str | None) -> int:
    if not header or not header.startswith("bytes="):
        return 0
    return int(header[len("bytes="):].split("-", 1)[0] or 0)
