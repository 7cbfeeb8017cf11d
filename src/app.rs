//! What each `bench` command does, independent of how its arguments were parsed.
