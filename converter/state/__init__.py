"""Model state beyond the IR's pairs: KV caches of decoder exports (kv_cache.py: the pairs and
optimum's files), their concat form (concat_form.py: a graph per length), the sliding window
that gives a Concat-grown cache a fixed capacity (window_form.py), and greedy decoding with the
cache carried as state from step to step (generation.py: `converter.generate`), and
encoder-decoders (seq2seq.py: the encoder once, the decoder's concat form fed its output and
the cross-attention caches of its first step: `converter.load_seq2seq`), and an
encoder-decoder as JavaScript that generates in the browser (seq2seq_js.py: the encoder's
module, the decoder's at each past length, generate() in seq2seq_generate.js, a page)."""
