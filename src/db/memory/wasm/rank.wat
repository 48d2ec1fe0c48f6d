;; The hot loops of the local vector index's ranking (src/db/memory/vector-cache.ts), over one agent's
;; vectors in the memory the cache imports. JavaScript keeps the layout and passes byte offsets;
;; these functions only read and write the regions they are given. i32.popcnt is one instruction
;; here, where JavaScript spends about a dozen on each 32-bit word.
;; Built into rank.wasm by `npm run build:wasm` (scripts/build-wasm.mjs).
(module
  (import "env" "memory" (memory 1))

  ;; Pass 1. For each of `size` slots: a dead slot (type 255) or one outside the filter gets the
  ;; distance 65535; any other gets the Hamming distance of its first `coarse` code words (at most
  ;; 4) to q0..q3, counted in the histogram. Returns how many slots pass the filter.
  (func (export "coarse")
    (param $size i32) (param $codes i32) (param $words i32) (param $coarse i32)
    (param $types i32) (param $rooms i32) (param $users i32)
    (param $typeMask i32) (param $room i32) (param $user i32)
    (param $q0 i32) (param $q1 i32) (param $q2 i32) (param $q3 i32)
    (param $distances i32) (param $histogram i32)
    (result i32)
    (local $s i32) (local $type i32) (local $code i32) (local $d i32) (local $matching i32) (local $stride i32)
    (local.set $stride (i32.shl (local.get $words) (i32.const 2)))
    (local.set $code (local.get $codes))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $s) (local.get $size)))
        (local.set $type (i32.load8_u (i32.add (local.get $types) (local.get $s))))
        (if
          (i32.or
            (i32.or
              (i32.eq (local.get $type) (i32.const 255))
              (i32.eqz (i32.and (i32.shr_u (local.get $typeMask) (local.get $type)) (i32.const 1))))
            (i32.or
              (i32.and
                (i32.ne (local.get $room) (i32.const 0))
                (i32.ne (i32.load (i32.add (local.get $rooms) (i32.shl (local.get $s) (i32.const 2)))) (local.get $room)))
              (i32.and
                (i32.ne (local.get $user) (i32.const 0))
                (i32.ne (i32.load (i32.add (local.get $users) (i32.shl (local.get $s) (i32.const 2)))) (local.get $user)))))
          (then
            (i32.store16 (i32.add (local.get $distances) (i32.shl (local.get $s) (i32.const 1))) (i32.const 65535)))
          (else
            (local.set $d (i32.popcnt (i32.xor (i32.load (local.get $code)) (local.get $q0))))
            (if (i32.gt_u (local.get $coarse) (i32.const 1))
              (then (local.set $d (i32.add (local.get $d) (i32.popcnt (i32.xor (i32.load offset=4 (local.get $code)) (local.get $q1)))))))
            (if (i32.gt_u (local.get $coarse) (i32.const 2))
              (then (local.set $d (i32.add (local.get $d) (i32.popcnt (i32.xor (i32.load offset=8 (local.get $code)) (local.get $q2)))))))
            (if (i32.gt_u (local.get $coarse) (i32.const 3))
              (then (local.set $d (i32.add (local.get $d) (i32.popcnt (i32.xor (i32.load offset=12 (local.get $code)) (local.get $q3)))))))
            (i32.store16 (i32.add (local.get $distances) (i32.shl (local.get $s) (i32.const 1))) (local.get $d))
            (i32.store
              (i32.add (local.get $histogram) (i32.shl (local.get $d) (i32.const 2)))
              (i32.add (i32.load (i32.add (local.get $histogram) (i32.shl (local.get $d) (i32.const 2)))) (i32.const 1)))
            (local.set $matching (i32.add (local.get $matching) (i32.const 1)))))
        (local.set $code (i32.add (local.get $code) (local.get $stride)))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $next)))
    (local.get $matching))

  ;; Pass 2. For each slot whose coarse distance is at most `cut`: add the Hamming distance of its
  ;; code words from `coarse` on to the query's (at `query`), store it, count it in the histogram
  ;; and append the slot to `kept`. Returns how many were kept.
  (func (export "refine")
    (param $size i32) (param $codes i32) (param $words i32) (param $coarse i32) (param $query i32)
    (param $cut i32) (param $distances i32) (param $histogram i32) (param $kept i32)
    (result i32)
    (local $s i32) (local $d i32) (local $w i32) (local $code i32) (local $count i32) (local $at i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $s) (local.get $size)))
        (local.set $at (i32.add (local.get $distances) (i32.shl (local.get $s) (i32.const 1))))
        (local.set $d (i32.load16_u (local.get $at)))
        (if (i32.le_u (local.get $d) (local.get $cut))
          (then
            (local.set $code (i32.add (local.get $codes) (i32.shl (i32.mul (local.get $s) (local.get $words)) (i32.const 2))))
            (local.set $w (local.get $coarse))
            (block $end
              (loop $word
                (br_if $end (i32.ge_u (local.get $w) (local.get $words)))
                (local.set $d
                  (i32.add (local.get $d)
                    (i32.popcnt
                      (i32.xor
                        (i32.load (i32.add (local.get $code) (i32.shl (local.get $w) (i32.const 2))))
                        (i32.load (i32.add (local.get $query) (i32.shl (local.get $w) (i32.const 2))))))))
                (local.set $w (i32.add (local.get $w) (i32.const 1)))
                (br $word)))
            (i32.store16 (local.get $at) (local.get $d))
            (i32.store
              (i32.add (local.get $histogram) (i32.shl (local.get $d) (i32.const 2)))
              (i32.add (i32.load (i32.add (local.get $histogram) (i32.shl (local.get $d) (i32.const 2)))) (i32.const 1)))
            (i32.store (i32.add (local.get $kept) (i32.shl (local.get $count) (i32.const 2))) (local.get $s))
            (local.set $count (i32.add (local.get $count) (i32.const 1)))))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $next)))
    (local.get $count))

  ;; Pass 3. For each of `count` slots listed at `pool`: the dot product of its int8 values with
  ;; the query's float32 values (at `query`), summed in float64 in order (as JavaScript would),
  ;; written to `out`.
  (func (export "dots")
    (param $pool i32) (param $count i32) (param $vectors i32) (param $dimensions i32) (param $query i32) (param $out i32)
    (local $i i32) (local $d i32) (local $v i32) (local $q i32) (local $sum f64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $v
          (i32.add (local.get $vectors)
            (i32.mul (i32.load (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $dimensions))))
        (local.set $q (local.get $query))
        (local.set $sum (f64.const 0))
        (local.set $d (i32.const 0))
        (block $end
          (loop $dim
            (br_if $end (i32.ge_u (local.get $d) (local.get $dimensions)))
            (local.set $sum
              (f64.add (local.get $sum)
                (f64.mul (f64.promote_f32 (f32.load (local.get $q))) (f64.convert_i32_s (i32.load8_s (i32.add (local.get $v) (local.get $d)))))))
            (local.set $q (i32.add (local.get $q) (i32.const 4)))
            (local.set $d (i32.add (local.get $d) (i32.const 1)))
            (br $dim)))
        (f64.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3))) (local.get $sum))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
)
