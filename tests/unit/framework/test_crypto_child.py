"""Certificate work in a child process: the manager's own process maps no X.509 library."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from ome.framework import crypto_child, pem_files

ROOT = Path(__file__).resolve().parents[3]


def test_the_manager_and_its_certificate_steps_import_no_cryptography() -> None:
    # A fresh interpreter: this test process has cryptography loaded already.
    script = (
        "import sys, tempfile\n"
        "import ome.cmd.manager, ome.webhooks.cert_bootstrap, ome.webhooks.self_register\n"
        "from ome.webhooks import self_register\n"
        "self_register.write_serving_certificate(tempfile.mkdtemp())\n"
        "from ome.cmd import manager\n"
        "manager._metrics_tls()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cryptography', 'cffi', '_cffi_backend')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_self_signed_pair_serves_tls_for_its_address(tmp_path: Path) -> None:
    ca, cert, key = crypto_child.self_signed("child-ca", "localhost", ip_addresses=("127.0.0.1",),
                                             dns_names=("localhost",))
    leaf = x509.load_pem_x509_certificate(cert)
    leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(ca))
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    cert_path, key_path = pem_files.write_cert_pair(tmp_path, cert, key)
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert_path, key_path)


async def test_a_failing_task_raises_its_message() -> None:
    with pytest.raises(crypto_child.CryptoChildError, match="serving-check failed: KeyError"):
        await crypto_child.run("serving-check", {"data": None})  # no dns_names, no now


def test_only_named_tasks_run() -> None:
    with pytest.raises(crypto_child.CryptoChildError, match="unknown certificate task"):
        crypto_child.run_sync("os:system", {})
    done = subprocess.run([sys.executable, "-m", "ome.framework.crypto_child", "os:system"], cwd=ROOT,
                          input=b"{}", capture_output=True, timeout=60, check=False)
    assert done.returncode == 2 and b"usage" in done.stderr


async def test_a_task_past_its_timeout_leaves_no_child(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[asyncio.subprocess.Process] = []
    spawn = asyncio.create_subprocess_exec

    async def spawned(*argv: str, **kwargs: object) -> asyncio.subprocess.Process:
        # A child that never answers: python reading stdin then sleeping.
        proc = await spawn(sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(600)",
                           **kwargs)  # type: ignore[arg-type]
        started.append(proc)
        return proc

    monkeypatch.setattr(crypto_child.asyncio, "create_subprocess_exec", spawned)
    with pytest.raises(TimeoutError):
        await crypto_child.run("serving-check", {}, timeout=0.5)
    assert started and started[0].returncode is not None


def test_the_serving_check_reads_times_as_the_parent_sends_them() -> None:
    now = datetime.datetime.now(datetime.UTC)
    found = crypto_child.run_sync("serving-check", {"data": {}, "dns_names": ["a.b.svc"], "now": now.isoformat()})
    assert found == {"problem": "missing or undecodable tls.crt, tls.key or ca.crt"}
