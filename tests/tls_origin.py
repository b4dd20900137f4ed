"""A loopback HTTPS server for the tests, with a certificate authority of the test's own: what a client's metadata
document (or any https origin) looks like to saip when saip is told to trust that authority."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.http_origin import http_origin

HOST = "localhost"


@dataclass(frozen=True)
class LocalAuthority:
    """A certificate authority (`ca_file`, the PEM to trust) and a server certificate it signed for localhost."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def local_authority(folder: Path) -> LocalAuthority:
    """Make the authority and the localhost certificate under `folder` (valid for a day)."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("saip test authority"))
        .issuer_name(_name("saip test authority"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(HOST))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(HOST), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    authority = LocalAuthority(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    authority.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    authority.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    authority.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return authority


@contextmanager
def https_origin(handler: Callable[..., BaseHTTPRequestHandler], authority: LocalAuthority) -> Iterator[str]:
    """Serve `handler` over TLS with the authority's localhost certificate until the block ends; yields the origin,
    e.g. https://localhost:41234."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(authority.cert_file, authority.key_file)
    with http_origin(handler, context, HOST) as origin:
        yield origin
