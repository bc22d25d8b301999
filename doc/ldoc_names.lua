-- An LDoc filter (ldoc --filter ldoc_names.list): prints one line per item
-- that LDoc parsed, "module<TAB>section<TAB>kind<TAB>name<TAB>summary", for
-- spec/doc_check.lua (topics are modules too, named after their file).
local M = {}

function M.list(modules)
  for mod in modules:iter() do
    for item in mod.items:iter() do
      io.write(mod.name, "\t", tostring(item.section or ""), "\t", item.type, "\t", item.name, "\t",
               ((item.summary or ""):gsub("%s+", " ")), "\n")
    end
  end
end

return M
