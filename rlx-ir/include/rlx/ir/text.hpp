// text.hpp: the text form of a graph, which prints and parses back to an equal graph.
//
// The form, by example:
//
//     graph @main {
//       %0 = input[name="x", shape=[batch, 4] f32] : [batch, 4] f32
//       %1 = param[name="w", shape=[3, 4] f32] : [3, 4] f32
//       %2 = matmul[transpose_b=true](%0, %1) : [batch, 3] f32
//       %3 = relu(%2) : [batch, 3] f32  # act
//       return %3
//     }
//
// Grammar (blanks and newlines separate tokens; `#` starts a comment):
//
//     graph     := 'graph' '@' name '{' node* 'return' [ref (',' ref)*] [aliasing] '}'
//     aliasing  := 'aliasing' integer '=' name (',' integer '=' name)*
//                  (Graph::aliases: output index = the Param it updates in place)
//     node      := '%' id '=' op ['[' field '=' value (',' field '=' value)* ']']
//                  ['(' [ref (',' ref)*] ')'] [':' shape] [label]
//     label     := '#' text up to the end of the node's line, or '#' "quoted string"
//     ref       := '%' id              (a value defined by an earlier node of the same graph)
//     name      := identifier | "quoted string"
//     shape     := '[' [dim (',' dim)*] ']' dtype        e.g. [batch, 128, 768] f32
//     dim       := integer | identifier | "quoted string" (a symbol)
//
// - The printer names node n `%n`; the parser accepts any `%id` ([A-Za-z0-9_.]+) and maps the
//   names to ids in definition order.
// - Attributes are printed generically from each struct's RLX_ATTRS field list, only where they
//   differ from the struct's defaults; the parser starts from the defaults, so fields may be given
//   in any order or left out. Values by field type: bool `true` / `false`; integers in decimal;
//   doubles as the shortest decimal that reads back exactly, or `nan`, `-nan`, `inf`, `-inf`;
//   strings in double quotes with `\"`, `\\`, `\n`, `\t`, `\r` and `\xHH` escapes; dtypes and
//   named enums by name; shapes as above; lists as `[a, b]`; an absent optional or sub-graph as
//   `none`; a sub-graph as a nested `graph @name { ... }` whose node ids start again at %0.
// - A constant tensor is `shape {e0, e1, ...}` with its elements in row-major order, written so
//   they read back bit-exactly: floats as shortest decimals (f16 / bf16 through their float value),
//   integers in decimal, bools as true / false. A tensor that decimals cannot reproduce (a NaN
//   with a payload, a bool byte other than 0 / 1) is written `shape 0x<hex>`: its raw bytes in
//   memory (little-endian) order, which always round-trips.
// - The `: shape` after a node is optional on input. The parser infers every node's type with
//   Graph::add and, when a type is written, checks that it is the inferred one.
// - A comment on a node's own line, after the node, is the node's label (Node::name); a label
//   with leading or trailing blanks, control characters or a leading quote prints quoted. Comments
//   on lines of their own are ignored.
// - Identifiers: [A-Za-z_][A-Za-z0-9_.]*; graph names and symbols that are not identifiers (or
//   are `none`) print quoted.
#pragma once

#include "rlx/ir/graph.hpp"

#include <string>
#include <string_view>

namespace rlx::ir {

/// Prints \p g in the rlx text form described above, ending with a newline. Never throws on a
/// graph that breaks invariants (it prints what is there), so it can be used in error reports.
std::string print(const Graph& g);

/// Parses the text form (as print() writes it, or written by hand). Throws ParseError
/// "line L:C: what was expected" on malformed input, on a node whose operands or attributes its op
/// rejects, and on a written type that differs from the inferred one. The result is verified.
Graph parse(std::string_view text);

} // namespace rlx::ir
