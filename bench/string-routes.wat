;; The routes by which a JS string's contents could reach wasm code without JSON.parse, for
;; bench/string-routes.mjs: JS String Builtins (`wasm:js-string`, Chromium 130+) copy a string's
;; UTF-16 units into a GC array in one call (`intoCharCodeArray`), which wasm can then scan, or copy
;; into linear memory where Rust code could read them. Each export does one step, so each is timed
;; alone. A scan counts `"` and `\`: the least any check of JSON has to look at.
(module
  (type $units (array (mut i16)))
  (import "wasm:js-string" "length" (func $length (param externref) (result i32)))
  (import "wasm:js-string" "intoCharCodeArray"
    (func $into (param externref (ref null $units) i32) (result i32)))
  (import "wasm:js-string" "charCodeAt" (func $charCodeAt (param externref i32) (result i32)))
  (memory (export "memory") 1)
  (global $copy (mut (ref null $units)) (ref.null $units))

  ;; The string's units into a new GC array (kept for the next calls); returns their number.
  (func (export "copyToArray") (param $s externref) (result i32)
    (local $n i32)
    (local.set $n (call $length (local.get $s)))
    (global.set $copy (array.new_default $units (local.get $n)))
    (drop (call $into (local.get $s) (global.get $copy) (i32.const 0)))
    (local.get $n))

  ;; The `"` and `\` in the GC array.
  (func (export "scanArray") (result i32)
    (local $a (ref $units)) (local $i i32) (local $n i32) (local $c i32) (local $u i32)
    (local.set $a (ref.as_non_null (global.get $copy)))
    (local.set $n (array.len (local.get $a)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $u (array.get_u $units (local.get $a) (local.get $i)))
        (local.set $c (i32.add (local.get $c)
          (i32.or (i32.eq (local.get $u) (i32.const 34)) (i32.eq (local.get $u) (i32.const 92)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $c))

  ;; The GC array into linear memory from 0, two bytes a unit (the memory must be large enough).
  (func (export "arrayToMemory") (result i32)
    (local $a (ref $units)) (local $i i32) (local $n i32)
    (local.set $a (ref.as_non_null (global.get $copy)))
    (local.set $n (array.len (local.get $a)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store16 (i32.shl (local.get $i) (i32.const 1))
          (array.get_u $units (local.get $a) (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $n))

  ;; The `"` and `\` of the string read unit by unit with the `charCodeAt` builtin.
  (func (export "scanString") (param $s externref) (result i32)
    (local $i i32) (local $n i32) (local $c i32) (local $u i32)
    (local.set $n (call $length (local.get $s)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $u (call $charCodeAt (local.get $s) (local.get $i)))
        (local.set $c (i32.add (local.get $c)
          (i32.or (i32.eq (local.get $u) (i32.const 34)) (i32.eq (local.get $u) (i32.const 92)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $c))
)
