//! Use cases over the ports: sessions, the Tinode message handlers, the local hub and fanout.
