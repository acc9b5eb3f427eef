"""Model state beyond the IR's pairs: KV caches of decoder exports (kv_cache.py), a decoder's
concat form run as one static graph per length (concat_form.py), and greedy decoding with the
cache carried as state from step to step (generation.py: `converter.generate`)."""
