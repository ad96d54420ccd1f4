//! A bounded memory of recently seen ids, oldest forgotten first: what a bus consumer drops repeats by.

use std::collections::{HashSet, VecDeque};

/// The last `capacity` ids seen; a capacity of 0 remembers nothing (every id is new).
#[derive(Debug)]
pub struct RecentIds {
    seen: HashSet<String>,
    order: VecDeque<String>,
    capacity: usize,
}

impl RecentIds {
    pub fn new(capacity: usize) -> Self {
        RecentIds { seen: HashSet::new(), order: VecDeque::new(), capacity }
    }

    /// Remembers `id`; false if it was remembered already.
    pub fn first(&mut self, id: &str) -> bool {
        if self.capacity == 0 {
            return true;
        }
        if self.seen.contains(id) {
            return false;
        }
        if self.order.len() >= self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        self.seen.insert(id.to_owned());
        self.order.push_back(id.to_owned());
        true
    }

    /// How many ids are remembered.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True if no id is remembered.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgets_the_oldest_beyond_capacity() {
        let mut d = RecentIds::new(2);
        assert!(d.first("a"));
        assert!(!d.first("a"));
        assert!(d.first("b"));
        assert!(d.first("c"), "a is forgotten now");
        assert!(d.first("a"));
        assert!(!d.first("c"));
        assert_eq!(d.len(), 2);
        let mut off = RecentIds::new(0);
        assert!(off.first("x") && off.first("x"), "capacity 0 remembers nothing");
        assert!(off.is_empty());
    }
}
