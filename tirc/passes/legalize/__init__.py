"""Phase 6, legalization: narrow float types the target cannot compute in (bfloat16,
float8) are stored as integers and computed in float32."""
