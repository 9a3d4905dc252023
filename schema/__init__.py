"""Records and configuration shared by every layer: msgspec Structs only (no Ray, no torch), so any
process can decode what another wrote."""
