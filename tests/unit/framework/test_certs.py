"""Certificates from certs.py: chains, SANs and usages as TLS peers check them."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ome.framework import certs, pem_files

CA_CERT, CA_KEY = certs.generate_ca("test-ca")
CA = x509.load_pem_x509_certificate(CA_CERT)


def test_ca_is_a_self_signed_ca() -> None:
    assert CA.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert CA.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    CA.verify_directly_issued_by(CA)


def test_serving_cert_has_sans_and_server_usage() -> None:
    pem, key_pem = certs.generate_serving_cert(
        CA_CERT, CA_KEY, "svc", dns_names=["svc.ns.svc", "localhost"], ip_addresses=["127.0.0.1", "::1"]
    )
    cert = x509.load_pem_x509_certificate(pem)
    cert.verify_directly_issued_by(CA)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["svc.ns.svc", "localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert 364 <= (cert.not_valid_after_utc - cert.not_valid_before_utc).days <= 366
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()  # type: ignore[union-attr]


def test_client_cert_carries_user_and_groups() -> None:
    pem, _ = certs.generate_client_cert(CA_CERT, CA_KEY, "admin", ["system:masters"])
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "admin"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]


def test_rsa_keypair_matches() -> None:
    private_pem, public_pem = certs.generate_rsa_keypair()
    private = serialization.load_pem_private_key(private_pem, password=None)
    public = serialization.load_pem_public_key(public_pem)
    assert isinstance(private, rsa.RSAPrivateKey) and isinstance(public, rsa.RSAPublicKey)
    assert private.public_key().public_numbers() == public.public_numbers()


def test_write_cert_pair_protects_the_key(tmp_path: Path) -> None:
    cert_path, key_path = pem_files.write_cert_pair(tmp_path / "sub", b"cert", b"key")
    assert cert_path.read_bytes() == b"cert" and key_path.read_bytes() == b"key"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert sorted(p.name for p in cert_path.parent.iterdir()) == ["tls.crt", "tls.key"]  # no temp files left
