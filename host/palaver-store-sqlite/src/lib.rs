//! SQLite adapter for the storage ports (users, topics, subscriptions, messages) through sqlx.
