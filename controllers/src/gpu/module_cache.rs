//! Device code compiled once per process, by source and target, for every device that loads it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// Compiled code by key (a kernel's source and what it was compiled for):
/// every device of a run compiles the same kernels, and a run-time compiler
/// takes hundreds of milliseconds per kernel.
pub struct ModuleCache<K, V> {
    map: Mutex<Option<HashMap<K, V>>>,
}

impl<K: Eq + Hash, V: Clone> ModuleCache<K, V> {
    /// An empty cache, for a `static`.
    pub const fn new() -> Self {
        ModuleCache {
            map: Mutex::new(None),
        }
    }

    /// The code for `key`, from `compile` on first use. The compile runs
    /// outside the lock: devices compiling different kernels do not queue.
    pub fn get_or_compile<E>(
        &self,
        key: K,
        compile: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let cached = {
            let cache = self.map.lock().unwrap_or_else(|e| e.into_inner());
            cache.as_ref().and_then(|m| m.get(&key).cloned())
        };
        if let Some(code) = cached {
            return Ok(code);
        }
        let code = compile()?;
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(key, code.clone());
        Ok(code)
    }
}

impl<K: Eq + Hash, V: Clone> Default for ModuleCache<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::ModuleCache;

    #[test]
    fn compiles_each_key_once_and_keeps_no_failure() {
        let cache: ModuleCache<&str, String> = ModuleCache::new();
        let mut runs = 0;
        let mut compile = |k: &str| {
            runs += 1;
            Ok::<_, ()>(k.to_uppercase())
        };
        assert_eq!(cache.get_or_compile("a", || compile("a")), Ok("A".into()));
        assert_eq!(cache.get_or_compile("a", || compile("x")), Ok("A".into()));
        assert_eq!(runs, 1);
        assert_eq!(cache.get_or_compile("b", || Err::<String, _>(7)), Err(7));
        assert_eq!(
            cache.get_or_compile("b", || Ok::<_, i32>("B".into())),
            Ok("B".into())
        );
    }
}
