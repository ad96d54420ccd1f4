//! In-memory adapters for every port: the embedded default's seq, idempotency, presence and bus, and a reference store for tests.
