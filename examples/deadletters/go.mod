module example.com/deadletters

go 1.26.8

require msgx v0.0.0

replace msgx => ../..
