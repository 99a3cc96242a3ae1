"""The near-duplicate rule (domain/duplicates.py) on its own: cosine is not enough, the specifics
decide. (Its precision and recall on the labelled pairs, with the real model, are in
tests/integration/test_near_duplicates.py.)"""

from __future__ import annotations

from strata_recall.domain.duplicates import (
    MERGE_COSINE,
    code_tokens,
    is_near_duplicate,
    literal_values,
    merge_refusal,
    numbers,
    opposite_polarity,
    same_specifics,
    swapped_roles,
)


def test_numbers_stand_alone() -> None:
    assert numbers("Xcode 15 on the macos-14 runners, port 5433, toolchain 1.75 at 02:00") == {
        "15",
        "14",
        "5433",
        "1.75",
        "02:00",
    }
    assert numbers("the e2e tests read S3 with python3") == set()


def test_code_tokens_are_flags_paths_and_joined_identifiers() -> None:
    assert code_tokens("Run `make db-up` before pytest -m integration") == {"db-up", "-m"}
    assert code_tokens("Set NODE_OPTIONS=--max-old-space-size=4096 in jest.config.js") == {
        "node_options",
        "--max-old-space-size",
        "jest.config.js",
    }
    assert code_tokens("Export KUBECONFIG=~/.kube/staging.yaml first.") == {"~/.kube/staging.yaml"}


def test_literal_values_are_blobs_hex_units_versions_quoted_strings_and_identifiers() -> None:
    assert literal_values("The golden body is SW52b2ljZTogMA== (base64), see commit 9c1e4f2") == {
        "SW52b2ljZTogMA",
        "base64",
        "9c1e4f2",
    }  # names like base64 or sha256 count too: both texts keep them
    assert literal_values("timeout 30s, limit 512Mi, toolchain go1.22.5, body CgVvcmRlchAA") == {
        "30s",
        "512Mi",
        "go1.22.5",
        "CgVvcmRlchAA",
    }
    assert literal_values("The CSV export uses ';' and the locale \"en-GB\"; call useLayoutEffect") == {
        ";",
        "en-GB",
        "useLayoutEffect",
    }
    assert literal_values("Don't run the e2e suite on GitHub; it's slow") == {"e2e"}  # apostrophes quote nothing


def test_a_distinct_literal_value_blocks_a_merge() -> None:
    # one embedding apart, two facts (issue #20: a merge swallowed lines differing only in a base64 value)
    assert not same_specifics(
        "The feature flag payload for the beta cohort is eyJjb2hvcnQiOiJiZXRhIn0",
        "The feature flag payload for the beta cohort is eyJjb2hvcnQiOiJhbHBoYSJ9",
    )
    assert not same_specifics(
        "The release build is tagged at commit 9c1e4f2", "The release build is tagged at commit 4b7a0d3"
    )
    assert not same_specifics("The request timeout is 30s", "The request timeout is 45s")
    assert not same_specifics("The CSV export uses ';' as the delimiter", "The CSV export uses '|' as the delimiter")
    # the same value said another way still merges; an elaboration may add one
    assert same_specifics(
        "The request timeout for the billing client is 30s", "The billing client's request timeout is 30s"
    )
    assert same_specifics("Tag the release at commit 9c1e4f2", "Tag the release at commit 9c1e4f2 after the changelog")


def test_the_guard_separates_what_cosine_cannot() -> None:
    assert not same_specifics("built with Xcode 15 on macos-14", "built with Xcode 14 on macos-13")
    assert not same_specifics("Run make db-up before pytest", "Run make db-down after pytest")
    assert not same_specifics("Always rebase before merging", "Never rebase before merging")
    assert not same_specifics("Upgrade the Stripe SDK", "Downgrade the Stripe SDK")
    assert not same_specifics("The staging database is reset every night", "The staging database is never reset")
    assert same_specifics("Run make db-up before pytest", "Run `make db-up` before running pytest")
    assert same_specifics("Use git rebase -i with autosquash", "Squash fixups with `git rebase -i --autosquash`")
    assert opposite_polarity("Turn on request logging", "Turn off request logging")
    assert not opposite_polarity("Pinning urllib3 did not help", "Upgrading it did not help either")


def test_the_same_words_in_other_roles_are_another_lesson() -> None:
    assert swapped_roles("Prefer tabs over spaces in the Makefile", "Prefer spaces over tabs in the Makefile")
    assert swapped_roles("The API calls the auth service", "The auth service calls the API")
    assert swapped_roles("Deploy the backend first, then the frontend", "Deploy the frontend first, then the backend")
    assert swapped_roles("Use Redis for sessions and Postgres for jobs", "Use Postgres for sessions and Redis for jobs")
    assert swapped_roles(
        "Staging reads from the replica and writes to the primary",
        "Staging reads from the primary and writes to the replica",
    )
    # moving a clause, or a word on both sides of the relation, is no swap
    assert not swapped_roles("In CI, run the linter before the tests", "Run the linter before the tests in CI")
    assert not swapped_roles(
        "Secrets are loaded from AWS Secrets Manager at container start",
        "Containers load their secrets from AWS Secrets Manager when they start",
    )
    assert not swapped_roles(
        "Docker build fails with 'no space left on device' on the CI runner",
        "CI runner Docker builds fail: no space left on device",
    )


def test_near_duplicate_needs_the_threshold_and_the_guard() -> None:
    a, b = "Run make db-up before pytest", "Run `make db-up` before running pytest"
    assert is_near_duplicate(MERGE_COSINE, a, b)
    assert not is_near_duplicate(MERGE_COSINE - 0.001, a, b)
    assert not is_near_duplicate(0.99, a, "Run make db-down after pytest")


def test_a_merge_keeps_kind_scope_problem_and_anchors() -> None:
    base = {
        "status": "active",
        "kind": "solution",
        "scope": "repo",
        "text": "Run make db-up before pytest",
        "problem_ids": ["p1"],
        "anchor_keys": {"Makefile"},
        "new_kind": "solution",
        "new_scope": "repo",
        "new_text": "Run `make db-up` before running pytest",
        "new_problem_id": "p1",
        "new_anchor_keys": set(),
        "similarity": 0.95,
    }
    assert merge_refusal(**base) is None
    assert merge_refusal(**{**base, "status": "archived"})
    assert merge_refusal(**{**base, "new_kind": "fact"})
    assert merge_refusal(**{**base, "new_scope": "global"})
    assert merge_refusal(**{**base, "new_problem_id": "p2"})
    assert merge_refusal(**{**base, "new_anchor_keys": {"tests/conftest.py"}})
    assert merge_refusal(**{**base, "kind": "change", "new_kind": "change"})
    assert merge_refusal(**{**base, "similarity": 0.5})


def test_contradicting_values_are_one_value_in_one_place() -> None:
    """Two texts that differ only by one value are a contradiction to show a person (the pair the
    near-duplicate rule refuses to merge); an added value, two changed values, another path or a negation
    are not."""
    from strata_recall.domain.duplicates import contradicting_values

    assert contradicting_values(0.95, "The CI machine has 2 cores", "The CI machine has 4 cores") == ("2", "4")
    assert contradicting_values(0.93, "request timeout is 30s", "request timeout is 60s") == ("30s", "60s")
    assert contradicting_values(0.97, "set the salt to c2FsdA==", "set the salt to bW9yZQ==") == ("c2FsdA", "bW9yZQ")
    assert contradicting_values(0.80, "The CI machine has 2 cores", "The CI machine has 4 cores") is None
    assert contradicting_values(0.95, "The CI machine has 2 cores", "The CI machine has 2 cores and 8 GB") is None
    assert contradicting_values(0.95, "service 1 listens on port 8001", "service 2 listens on port 8002") is None
    assert contradicting_values(0.95, "the cache is 2 GB in src/a.py", "the cache is 4 GB in src/b.py") is None
    assert contradicting_values(0.95, "retry 3 times", "do not retry 5 times") is None
    assert contradicting_values(0.99, "The CI machine has 2 cores", "The CI machine has 2 cores") is None
