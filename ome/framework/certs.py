"""X.509 material for webhook serving and the local control plane: a CA, leaf certificates, RSA keys.

Everything is PEM bytes in and out, so callers can write Secrets, files or kubeconfigs without touching
`cryptography` objects. Leaf certificates carry the extensions Go's TLS stack checks (SANs, key usage,
extended key usage); a Go client rejects a serving certificate whose name is only in the CN.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALIDITY_DAYS: Final = 365
RSA_KEY_SIZE: Final = 2048
# Backdate notBefore so a peer whose clock runs a little behind still accepts a fresh certificate.
CLOCK_SKEW_ALLOWANCE: Final = datetime.timedelta(minutes=5)

PemPair = tuple[bytes, bytes]
"""(certificate PEM, private key PEM)."""


def generate_rsa_keypair(key_size: int = RSA_KEY_SIZE) -> PemPair:
    """(private key PEM, PKCS#8; public key PEM, SubjectPublicKeyInfo), e.g. for service account signing."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return _key_pem(key), public


def generate_ca(common_name: str, *, validity_days: int = DEFAULT_VALIDITY_DAYS) -> PemPair:
    """A self-signed CA that can sign leaf certificates (pathlen 0: no intermediates)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_SIZE)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    builder = (
        _base_builder(name, name, key.public_key(), validity_days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(digital_signature=True, key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
    )
    cert = builder.sign(key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def generate_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str,
    *,
    dns_names: Iterable[str] = (),
    ip_addresses: Iterable[str] = (),
    organizations: Iterable[str] = (),
    server: bool = True,
    client: bool = False,
    validity_days: int = DEFAULT_VALIDITY_DAYS,
) -> PemPair:
    """A leaf certificate signed by the CA, for TLS server and/or client authentication."""
    if not server and not client:
        raise ValueError("a leaf certificate needs server or client usage")
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, rsa.RSAPrivateKey):
        raise ValueError("the CA key must be an RSA key")
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_SIZE)
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    subject = x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [ExtendedKeyUsageOID.CLIENT_AUTH] * client
    builder = (
        _base_builder(subject, ca_cert.subject, key.public_key(), validity_days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True, key_encipherment=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    sans = _subject_alt_names(dns_names, ip_addresses)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def generate_serving_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str,
    *,
    dns_names: Iterable[str] = (),
    ip_addresses: Iterable[str] = (),
    validity_days: int = DEFAULT_VALIDITY_DAYS,
) -> PemPair:
    """A TLS server certificate; names go into SANs (the CN alone is ignored by modern clients)."""
    return generate_cert(
        ca_cert_pem,
        ca_key_pem,
        common_name,
        dns_names=dns_names,
        ip_addresses=ip_addresses,
        validity_days=validity_days,
    )


def generate_client_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str,
    organizations: Iterable[str] = (),
    *,
    validity_days: int = DEFAULT_VALIDITY_DAYS,
) -> PemPair:
    """A TLS client certificate; Kubernetes reads the user from CN and the groups from O."""
    return generate_cert(
        ca_cert_pem,
        ca_key_pem,
        common_name,
        organizations=organizations,
        server=False,
        client=True,
        validity_days=validity_days,
    )


def serial_number(cert_pem: bytes) -> int:
    return x509.load_pem_x509_certificate(cert_pem).serial_number


def _base_builder(
    subject: x509.Name, issuer: x509.Name, public_key: rsa.RSAPublicKey, validity_days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW_ALLOWANCE)
        .not_valid_after(now + datetime.timedelta(days=validity_days))
    )


def _key_usage(
    *,
    digital_signature: bool = False,
    key_encipherment: bool = False,
    key_cert_sign: bool = False,
    crl_sign: bool = False,
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _subject_alt_names(dns_names: Iterable[str], ip_addresses: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return names


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def self_signed_task(payload: Mapping[str, Any]) -> dict[str, str]:
    """`ome.framework.crypto_child`'s "self-signed" task: a new CA and a serving certificate it signed,
    as PEM text (`ca`, `cert`, `key`)."""
    ca_pem, ca_key = generate_ca(str(payload["ca_common_name"]))
    cert_pem, key_pem = generate_serving_cert(
        ca_pem, ca_key, str(payload["common_name"]),
        dns_names=[str(n) for n in payload.get("dns_names") or ()],
        ip_addresses=[str(ip) for ip in payload.get("ip_addresses") or ()],
    )
    return {"ca": ca_pem.decode("ascii"), "cert": cert_pem.decode("ascii"), "key": key_pem.decode("ascii")}
