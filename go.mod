module github.com/goxio/goxio

go 1.26
