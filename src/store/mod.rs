//! Store adapters: SQLite (embedded default) and PostgreSQL behind `actors::store::Store`.
