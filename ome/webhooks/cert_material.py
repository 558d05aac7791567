"""The X.509 side of the webhook's serving certificate (`ome.webhooks.cert_bootstrap`): whether a
Secret can serve, and a new CA and serving pair for it.

It runs in `ome.framework.crypto_child`'s child process (`check_task`, `generate_task`), never in the
manager; the functions under them are pure and tested directly.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from ome.framework import certs
from ome.webhooks.cert_bootstrap import CA_KEY, CERT_KEY, KEY_KEY, RENEW_BEFORE, encode_data, secret_material


def covers(cert_pem: bytes, dns_names: Sequence[str]) -> bool:
    """Whether every name is among the certificate's DNS SANs (exactly, case-insensitively)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    present = {name.lower() for name in san.get_values_for_type(x509.DNSName)}
    return all(name.lower() in present for name in dns_names)


def expires_within(cert_pem: bytes, window: datetime.timedelta, now: datetime.datetime) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem)
    return cert.not_valid_after_utc - now < window


def secret_problem(
    secret: Mapping[str, Any], dns_names: Sequence[str], now: datetime.datetime
) -> str | None:
    """Why the Secret cannot serve the webhook (None when it can)."""
    material = secret_material(secret)
    if material is None:
        return "missing or undecodable tls.crt, tls.key or ca.crt"
    try:
        cert = x509.load_pem_x509_certificate(material[CERT_KEY])
        key = serialization.load_pem_private_key(material[KEY_KEY], password=None)
        cas = x509.load_pem_x509_certificates(material[CA_KEY])
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        return f"unparseable certificate material: {exc}"
    if _public_der(key.public_key()) != _public_der(cert.public_key()):
        return "tls.key does not match tls.crt"
    issuer = _issuer_of(cert, cas)
    if issuer is None:
        return "tls.crt is not issued by a CA in ca.crt"
    if issuer.not_valid_after_utc - now < RENEW_BEFORE:
        return f"CA expires {issuer.not_valid_after_utc.isoformat()}"
    if not covers(material[CERT_KEY], dns_names):
        return f"certificate does not cover {', '.join(dns_names)}"
    if expires_within(material[CERT_KEY], RENEW_BEFORE, now):
        return f"certificate expires {cert.not_valid_after_utc.isoformat()}"
    return None


def build_secret_data(
    cert_pem: bytes, key_pem: bytes, ca_pem: bytes, *, previous: Mapping[str, bytes] | None = None,
    now: datetime.datetime,
) -> dict[str, str]:
    """The Secret's data; ca.crt also keeps the CA that issued the previous tls.crt while it is valid."""
    bundle = ca_pem
    if previous is not None:
        old = _previous_ca(previous, now)
        if old is not None and old not in bundle:
            bundle = bundle + old
    return encode_data({CERT_KEY: cert_pem, KEY_KEY: key_pem, CA_KEY: bundle})


def generate(
    dns_names: Sequence[str], previous: Mapping[str, bytes] | None, now: datetime.datetime
) -> dict[str, str]:
    """A new CA and a serving certificate for the names, as the Secret's data."""
    ca_pem, ca_key = certs.generate_ca(f"ome-webhook-ca@{int(now.timestamp())}")
    # CN: the Service name (a CN holds at most 64 characters; clients match the SANs anyway).
    common_name = dns_names[0].split(".", 1)[0]
    cert_pem, key_pem = certs.generate_serving_cert(ca_pem, ca_key, common_name, dns_names=dns_names)
    return build_secret_data(cert_pem, key_pem, ca_pem, previous=previous, now=now)


# -- the child's tasks: a Secret's `data` (base64) and ISO times in, JSON out -----------------------


def check_task(payload: Mapping[str, Any]) -> dict[str, Any]:
    """{"problem": why the Secret cannot serve, or None}."""
    now = datetime.datetime.fromisoformat(str(payload["now"]))
    return {"problem": secret_problem({"data": payload.get("data")}, list(payload["dns_names"]), now)}


def generate_task(payload: Mapping[str, Any]) -> dict[str, Any]:
    """{"data": the replacement Secret's data}; `data` in the payload is the Secret being replaced."""
    now = datetime.datetime.fromisoformat(str(payload["now"]))
    previous = secret_material({"data": payload.get("data")})  # None: no Secret, or data that does not decode
    return {"data": generate(list(payload["dns_names"]), previous, now)}


def _issuer_of(cert: x509.Certificate, cas: Sequence[x509.Certificate]) -> x509.Certificate | None:
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return ca
    return None


def _public_der(key: Any) -> bytes:
    der: bytes = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return der


def _previous_ca(previous: Mapping[str, bytes], now: datetime.datetime) -> bytes | None:
    try:
        cert = x509.load_pem_x509_certificate(previous[CERT_KEY])
        ca = _issuer_of(cert, x509.load_pem_x509_certificates(previous[CA_KEY]))
    except (KeyError, ValueError):
        return None
    if ca is None or ca.not_valid_after_utc <= now:
        return None
    return ca.public_bytes(serialization.Encoding.PEM)
