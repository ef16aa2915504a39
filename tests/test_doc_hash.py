"""Each sample of a task of ours names its document (lmms_spatial.plugin.samples.hash_documents): lmms-eval
0.7.x hashes ``null`` for every sample, since it builds its requests without their document."""

from __future__ import annotations

import hashlib

from lmms_spatial.plugin.samples import NULL_DOC_HASH, document_hash, hash_documents


def test_lmms_evals_hash_of_every_sample_is_the_hash_of_null():
    assert NULL_DOC_HASH == "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"


def test_a_documents_hash_is_that_of_its_fields_in_key_order_with_image_bytes_by_their_own_hash():
    image = hashlib.sha256(b"\x89PNG").hexdigest()
    text = '{"id": "q1", "images": [{"bytes": "sha256:' + image + '"}], "question": "Left?"}'
    doc = {"question": "Left?", "images": [{"bytes": b"\x89PNG"}], "id": "q1"}
    assert document_hash(doc) == hashlib.sha256(text.encode()).hexdigest()


def test_samples_of_our_tasks_get_their_documents_hash_and_lmms_evals_own_are_left_alone():
    def sample(doc_id, doc, doc_hash=NULL_DOC_HASH):
        return {"doc_id": doc_id, "doc": doc, "doc_hash": doc_hash}

    results = {"samples": {
        "mmsi_vanilla": [sample(0, {"id": 0, "question": "a"}), sample(1, {"id": 1, "question": "b"})],
        "mme": [sample(0, {"question": "a"})],  # lmms-eval's own task: not ours to change
        "odi_x": [sample(0, {"id": "o"}, doc_hash="already-hashed")],  # an lmms-eval that hashed the doc itself
    }}  # fmt: skip
    hash_documents(results, {"mmsi_vanilla": {}, "odi_x": {}})
    ours = [s["doc_hash"] for s in results["samples"]["mmsi_vanilla"]]
    assert ours == [document_hash({"id": 0, "question": "a"}), document_hash({"id": 1, "question": "b"})]
    assert ours[0] != ours[1]
    assert results["samples"]["mme"][0]["doc_hash"] == NULL_DOC_HASH
    assert results["samples"]["odi_x"][0]["doc_hash"] == "already-hashed"
