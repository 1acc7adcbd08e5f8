;; Exports the direct ABI but imports a function the host does not provide.
(module
  (import "env" "socket_connect" (func $connect (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) i32.const 1)
  (func (export "warden_manifest") (result i64) i64.const 0)
  (func (export "warden_input") (param i32) (result i32) i32.const 1024)
  (func (export "warden_handle") (param i32)))
