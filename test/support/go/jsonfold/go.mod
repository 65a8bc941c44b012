module plexus.test/jsonfold

go 1.19
